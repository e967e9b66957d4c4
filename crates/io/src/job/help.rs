//! fio's help switches as text: `--cmdhelp[=OPTION]` and `--enghelp[=ENGINE]`.

use super::options::{self, BOOKKEEPING_ONLY};
use crate::engine;

/// `--cmdhelp`: every option with its help line; `--cmdhelp=NAME`: that
/// option in detail (aliases, whether it takes a value, what plumb does
/// with it); `--cmdhelp=all` as `--cmdhelp`.
pub fn options(which: Option<&str>) -> String {
    match which.filter(|w| !w.is_empty() && *w != "all") {
        None => {
            let mut out = String::new();
            for o in options::all_options() {
                out.push_str(&format!("{:<24}: {}\n", o.name, o.help));
            }
            for name in BOOKKEEPING_ONLY {
                out.push_str(&format!(
                    "{name:<24}: accepted without effect (tunes fio's own bookkeeping)\n"
                ));
            }
            out
        }
        Some(name) => one_option(name),
    }
}

fn one_option(name: &str) -> String {
    if let Some(o) = options::find_option(name) {
        let mut out = format!("{:>20}: {}\n", o.name, o.help);
        if !o.aliases.is_empty() {
            out.push_str(&format!("{:>20}: {}\n", "alias", o.aliases.join(", ")));
        }
        let kind = if o.flag {
            "flag (a value of 0 or 1 may be given)"
        } else {
            "takes a value"
        };
        out.push_str(&format!("{:>20}: {kind}\n", "type"));
        if let Some(why) = options::without_effect(o.name) {
            out.push_str(&format!(
                "{:>20}: accepted without effect: {why}\n",
                "plumb"
            ));
        }
        return out;
    }
    if BOOKKEEPING_ONLY.contains(&name) {
        return format!("{name:>20}: accepted without effect (tunes fio's own bookkeeping)\n");
    }
    match options::suggest(name) {
        Some(near) => format!("No such command: {name} (did you mean '{near}'?)\n"),
        None => format!("No such command: {name}\n"),
    }
}

/// `--enghelp`: the engines plumb has; `--enghelp=ENGINE`: what that
/// engine is.
pub fn engines(which: Option<&str>) -> String {
    match which.filter(|w| !w.is_empty()) {
        None => {
            let mut out = String::from("Available IO engines:\n");
            for name in engine::names() {
                out.push_str(&format!("\t{name}\n"));
            }
            out
        }
        Some(spec) => {
            // fio's form is ENGINE[,COMMAND]: the command names one of its options.
            let (name, command) = match spec.split_once(',') {
                Some((n, c)) => (n, Some(c)),
                None => (spec, None),
            };
            let Some(e) = engine::find(name) else {
                return format!(
                    "engine {name} not found (plumb has: {})\n",
                    engine::names().join(", ")
                );
            };
            if let Some(c) = command {
                return one_option(c);
            }
            let mut out = format!("{}: ", e.name);
            out.push_str(if e.caps.diskless {
                "no file I/O"
            } else if e.caps.is_async {
                "asynchronous: iodepth I/Os in flight"
            } else {
                "synchronous: one I/O at a time per thread"
            });
            out.push('\n');
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_names_options_aliases_and_near_misses() {
        let bs = options(Some("bs"));
        assert!(bs.contains("alias") && bs.contains("blocksize"), "{bs}");
        assert!(options(Some("iodepht")).contains("did you mean 'iodepth'"));
        assert!(options(Some("gtod_reduce")).contains("without effect"));
        let all = options(None);
        assert!(all.lines().count() > 40);
        assert!(engines(None).contains("\tio_uring\n"));
        assert!(engines(Some("libaio")).contains("asynchronous"));
        assert!(engines(Some("nope")).contains("not found"));
    }
}
