//! `plumb check`: loads a scenario, pack folder or built-in pack and
//! compiles every scenario in it without running anything (Rhai syntax and
//! host-function names; components linked against the world, through the
//! cache), and its comparison template; in Rhai scenarios, option keys
//! their host function does not take and capabilities a call visibly needs
//! that the pack does not declare ([`crate::script::lint`]).

use super::ExitCode;
use crate::scenario::template::Template;
use crate::scenario::{self, pack};
use crate::terminal::{clean, clean_text};
use std::time::Instant;

/// `plumb check SCENARIO`: compile and validate without running.
pub fn check_main(arg: &str) -> ExitCode {
    let pack = match pack::resolve_selection(arg, &[]) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("plumb check: error: {}", clean_text(&e.to_string()));
            return ExitCode::BadInput;
        }
    };
    let mut code = ExitCode::Ok;
    for s in &pack.scenarios {
        let t = Instant::now();
        match scenario::compile(s) {
            Ok(scenario::Compiled::Wasm(c)) => println!(
                "{}: ok ({} in {:.3} s)",
                clean(&s.file),
                if c.cached {
                    "loaded from the cache"
                } else {
                    "compiled"
                },
                t.elapsed().as_secs_f64()
            ),
            Ok(scenario::Compiled::Rhai(ast)) => {
                let declared = pack.declared.then_some(&pack.capabilities);
                let found = crate::script::lint::findings(&s.file, &s.source, &ast, declared);
                for f in &found {
                    eprintln!("{}", clean_text(&f.to_string()));
                }
                if found.is_empty() {
                    println!("{}: ok", clean(&s.file));
                } else {
                    code = ExitCode::BadInput;
                }
            }
            Err(e) => {
                eprintln!("{}", clean_text(&e.to_string()));
                code = ExitCode::BadInput;
            }
        }
    }
    if let Some(t) = &pack.compare {
        let checked = Template::from_pack(&format!("{}/", pack.name), t)
            .and_then(|template| template.check().map(|()| template));
        match checked {
            Ok(template) => println!("{}: ok (comparison template)", clean(&template.file)),
            Err(e) => {
                eprintln!("{}", clean_text(&e.to_string()));
                code = ExitCode::BadInput;
            }
        }
    }
    code
}
