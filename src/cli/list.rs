//! `plumb list`: the built-in packs (or one pack), with their scenarios,
//! parameters and what they need.

use super::ExitCode;
use crate::scenario::pack;
use crate::terminal::{clean, clean_text};

/// `plumb list [PACK]`: packs, their scenarios and parameters.
pub fn list_main(arg: Option<&str>) -> ExitCode {
    let names: Vec<String> = match arg {
        Some(a) => vec![a.to_string()],
        None => pack::builtin_names()
            .into_iter()
            .map(String::from)
            .collect(),
    };
    for n in names {
        match pack::resolve_selection(&n, &[]) {
            Ok(p) => {
                println!(
                    "{} {}: {}",
                    clean(&p.name),
                    clean(&p.version),
                    clean(&p.description)
                );
                for s in &p.scenarios {
                    println!("  scenario {}", clean(&s.name));
                }
                for (k, d) in &p.params {
                    println!(
                        "  -p {}={:<10} {} ({})",
                        clean(k),
                        clean(&d.default_text()),
                        clean(&d.description),
                        clean(&d.unit)
                    );
                }
                for c in p.capabilities.describe() {
                    println!("  needs: {}", clean(&c));
                }
            }
            Err(e) => {
                eprintln!("plumb list: error: {}", clean_text(&e.to_string()));
                return ExitCode::BadInput;
            }
        }
    }
    ExitCode::Ok
}
