//! WebAssembly scenarios: components targeting the `plumb:bench/scenario`
//! world (see `wit/`), run by wasmtime with WASI preview 2. The guest gets
//! stdout and stderr (shown as the scenario's log), a clock and random
//! numbers; no environment, no sockets, no filesystem: everything else goes
//! through the host API, the same [`crate::api::Host`] Rhai uses.

mod bindings;
mod cache;
mod convert;
mod engine;
mod limiter;
pub mod template;

pub use engine::{check, compile, run, Compiled, WasmLimits};

#[cfg(test)]
mod tests {
    use crate::script::rhai_modules::host_functions;
    use std::collections::BTreeSet;

    /// Function names per interface in the WIT (`fs::write_file`), and the
    /// file resource's methods, read from `wit/plumb.wit`.
    fn wit_functions() -> (BTreeSet<String>, BTreeSet<String>) {
        let wit = include_str!("../../../../wit/plumb.wit");
        let (mut funcs, mut methods) = (BTreeSet::new(), BTreeSet::new());
        let (mut interface, mut in_resource) = (String::new(), false);
        for line in wit.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("interface ") {
                interface = rest.trim_end_matches(" {").to_string();
            } else if line.starts_with("world ") {
                interface.clear();
            } else if line.starts_with("resource ") {
                in_resource = true;
            } else if in_resource && line == "}" {
                in_resource = false;
            } else if let Some((name, _)) =
                line.split_once(": func(").filter(|_| !interface.is_empty())
            {
                let name = name.trim_start_matches('%').replace('-', "_");
                if in_resource {
                    methods.insert(name);
                } else {
                    funcs.insert(format!("{interface}::{name}"));
                }
            }
        }
        (funcs, methods)
    }

    #[test]
    fn every_host_function_is_in_both_rhai_and_wit() {
        let (wit, methods) = wit_functions();
        // Rhai-only by nature: time::measure takes a closure. WIT's
        // params::get is Rhai's global `param`.
        let rhai: BTreeSet<String> = host_functions()
            .iter()
            .filter(|f| *f != "time::measure")
            .cloned()
            .chain(["params::get".to_string()])
            .collect();
        let only_rhai: Vec<_> = rhai.difference(&wit).collect();
        let only_wit: Vec<_> = wit.difference(&rhai).collect();
        assert!(
            only_rhai.is_empty() && only_wit.is_empty(),
            "only in Rhai: {only_rhai:?}; only in WIT: {only_wit:?}"
        );
        let rhai_methods = include_str!("../../../script/src/script/rhai_modules.rs");
        for m in &methods {
            assert!(
                rhai_methods.contains(&format!("\"{m}\"")),
                "file method {m} is not registered for Rhai"
            );
        }
        assert_eq!(methods.len(), 14, "{methods:?}");
    }
}
