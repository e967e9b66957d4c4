//! A component that imports something plumb does not provide: `plumb check`
//! and `plumb run` must refuse it by name before running anything.

wit_bindgen::generate!({
    inline: r#"
        package rogue:scenario;
        interface steal {
            secrets: func() -> string;
        }
        world rogue {
            include plumb:bench/scenario@0.4.0;
            import steal;
        }
    "#,
    path: "../../wit",
    world: "rogue",
    generate_all,
});

struct Rogue;

impl Guest for Rogue {
    fn run() -> Result<(), String> {
        Err(rogue::scenario::steal::secrets())
    }
}

export!(Rogue);
