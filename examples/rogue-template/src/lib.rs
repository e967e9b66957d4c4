//! A hostile comparison template for plumb's tests: what it does is picked
//! by the baseline run's label — `spin` loops forever, `grow` allocates
//! until the memory limit stops it, `trap` panics, `fail` returns an error,
//! `flood` returns more tables than allowed; anything else one small table.

wit_bindgen::generate!({ world: "compare-template", path: "../../wit" });


struct Rogue;

impl Guest for Rogue {
    fn render(input: Comparison) -> Result<Vec<Table>, String> {
        let mode = input.runs.first().and_then(|r| r.label.clone()).unwrap_or_default();
        let table = || Table {
            title: "rogue".into(),
            header: vec!["a".into()],
            rows: vec![vec!["1".into()]],
            notes: vec![],
        };
        match mode.as_str() {
            "spin" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "grow" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "trap" => panic!("the rogue template panics"),
            "fail" => Err("the rogue template gives up".into()),
            "flood" => Ok((0..1000).map(|_| table()).collect()),
            _ => Ok(vec![table()]),
        }
    }
}

export!(Rogue);
