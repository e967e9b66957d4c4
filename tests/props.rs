//! Property tests over every parser and every host function's arguments.
//!
//! The property everywhere: no panic, no abort, an error that names the
//! input, and (for scenario operations) nothing written outside the run
//! directory. Parsers are called in-process through the library under
//! `catch_unwind` (the dev profile has overflow checks, so an unchecked
//! `u64` sum panics here); host functions run in scripts through the real
//! binary under memory and time limits (a hostile size must not be able to
//! take the test process or the machine down with it).
//!
//! Seeds are fixed and case counts bounded; failures are not shrunk (each
//! binary run costs time) so a failing case prints the input as generated.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngSeed, TestCaseError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

fn config(cases: u32, seed: u64) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 0,
        ..Config::default()
    }
}

/// Calls `f`, turning a panic into a test failure that shows the input.
fn no_panic<T>(what: &str, input: &str, f: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        TestCaseError::fail(format!("{what} panicked ({msg}) on input:\n{input:?}"))
    })
}

/// An error message must say something.
fn named(what: &str, input: &str, msg: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        !msg.trim().is_empty(),
        "{what}: empty error message for {input:?}"
    );
    Ok(())
}

/// Numbers and words that break naive parsers and arithmetic.
fn hostile_number() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("-0".to_string()),
        Just("nan".to_string()),
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("1e308".to_string()),
        Just("1e-300".to_string()),
        Just("1e19".to_string()),
        Just("4294967295".to_string()),
        Just("4294967296".to_string()),
        Just("4294967297".to_string()),
        Just("9223372036854775807".to_string()),
        Just("9223372036854775808".to_string()),
        Just("18446744073709551615".to_string()),
        Just("18446744073709551616".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("16E".to_string()),
        Just("17E".to_string()),
        Just("1P".to_string()),
        Just("8191P".to_string()),
        Just("0x10".to_string()),
        Just("".to_string()),
        Just(" ".to_string()),
        Just("%".to_string()),
        Just("100%".to_string()),
        Just("1e308%".to_string()),
        Just("-5%".to_string()),
        Just("4k".to_string()),
        Just("1kib".to_string()),
        Just("4k-1G".to_string()),
        Just("1G-0".to_string()),
        Just("4k/50:64k/50".to_string()),
        Just("4k/200:0/0".to_string()),
        Just("zipf:nan".to_string()),
        Just("zipf:0".to_string()),
        Just("zipf:1e308".to_string()),
        Just("pareto:-1".to_string()),
        Just("normal:inf".to_string()),
        Just("99999999999999999999h".to_string()),
        Just("1e300s".to_string()),
        Just("-1ms".to_string()),
        Just("../../x".to_string()),
        Just("/etc/passwd".to_string()),
        Just("a:b:../c".to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        (
            any::<u64>(),
            prop::sample::select(vec![
                "k", "K", "m", "M", "g", "G", "t", "T", "p", "P", "e", "E", "KiB", "s", "ms", "us",
                "m", "h", "%"
            ])
        )
            .prop_map(|(n, s)| format!("{n}{s}")),
        "[ -~]{0,12}",
        ".{0,6}",
    ]
}

// ---------------------------------------------------------------- units

proptest! {
    #![proptest_config(config(2000, 0x1157_0001))]

    /// Sizes and durations: no panic; a suffixed size is exact or an error, never wrapped.
    #[test]
    fn sizes_and_durations_parse_without_panic(text in hostile_number()) {
        let size = no_panic("parse_size", &text, || plumb::units::parse_size(&text))?;
        if let Err(e) = &size { named("parse_size", &text, &e.to_string())?; }
        let spec = no_panic("parse_size_spec", &text, || plumb::units::parse_size_spec(&text))?;
        if let Err(e) = &spec { named("parse_size_spec", &text, &e.to_string())?; }
        let d = no_panic("parse_duration", &text, || plumb::units::parse_duration(&text))?;
        if let Err(e) = &d { named("parse_duration", &text, &e.to_string())?; }
    }

    #[test]
    fn suffixed_sizes_never_wrap(n in any::<u64>(), shift in prop::sample::select(vec![("k", 10u32), ("m", 20), ("g", 30), ("t", 40), ("p", 50), ("e", 60)])) {
        let text = format!("{n}{}", shift.0);
        let got = no_panic("parse_size", &text, || plumb::units::parse_size(&text))?;
        match n.checked_mul(1u64 << shift.1) {
            Some(v) => prop_assert_eq!(got.ok(), Some(v), "{}", text),
            None => prop_assert!(got.is_err(), "{text} wrapped to {got:?}"),
        }
    }

    /// `--assert` expressions: no panic; NaN is never a threshold.
    #[test]
    fn assertions_parse_without_panic(metric in "[a-z./_-]{0,10}", op in prop::sample::select(vec![">=", ">", "<=", "<", "==", "=", ""]), value in hostile_number()) {
        let text = format!("{metric} {op} {value}");
        let r = no_panic("assertions::parse", &text, || plumb::scenario::assertions::parse(&text))?;
        match r {
            Err(e) => named("assertions::parse", &text, &e.to_string())?,
            Ok(a) => prop_assert!(!format!("{a:?}").to_lowercase().contains("nan"), "{text} accepted as {a:?}"),
        }
    }
}

// ---------------------------------------------------------------- fio options and job files

fn option_name() -> impl Strategy<Value = String> {
    let names: Vec<String> = plumb::job::options::all_options()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .map(str::to_string)
        .collect();
    prop_oneof![
        9 => prop::sample::select(names),
        1 => "[a-z_]{0,12}",
    ]
}

proptest! {
    #![proptest_config(config(3000, 0x1157_0002))]

    /// Any option with any value: no panic in apply or validate; errors name the option.
    #[test]
    fn fio_options_never_panic(opts in prop::collection::vec((option_name(), prop::option::of(hostile_number())), 1..6)) {
        let input = format!("{opts:?}");
        let mut job = plumb::job::JobSpec::default();
        for (name, value) in &opts {
            let r = no_panic("options::apply", &input, || plumb::job::options::apply(&mut job, name, value.as_deref()))?;
            if let Err(e) = r {
                let msg = e.to_string();
                named("options::apply", &input, &msg)?;
                prop_assert!(msg.contains(name.as_str()) || e.option == *name, "error does not name '{name}': {msg}");
            }
        }
        let v = no_panic("options::validate", &input, || plumb::job::options::validate(&job))?;
        if let Err(e) = v { named("options::validate", &input, &e.to_string())?; }
    }

    /// numjobs, iodepth, nrfiles, loops: a value that does not fit is an error, never truncated.
    #[test]
    fn counts_are_exact_or_refused(which in prop::sample::select(vec!["numjobs", "iodepth", "nrfiles", "loops", "iodepth_batch_submit", "rwmixread", "fsync", "fdatasync"]), n in prop_oneof![any::<u64>(), 0u64..=5, (u32::MAX as u64 - 2)..=(u32::MAX as u64 + 2)]) {
        let text = n.to_string();
        let mut job = plumb::job::JobSpec::default();
        let r = no_panic("options::apply", &text, || plumb::job::options::apply(&mut job, which, Some(&text)))?;
        if r.is_ok() {
            let got: u64 = match which {
                "numjobs" => job.numjobs.into(),
                "iodepth" => job.iodepth.into(),
                "nrfiles" => job.nrfiles.into(),
                "loops" => job.loops.into(),
                "iodepth_batch_submit" => job.iodepth_batch_submit.into(),
                "rwmixread" => job.rwmixread.into(),
                "fsync" => job.fsync.into(),
                _ => job.fdatasync.into(),
            };
            prop_assert_eq!(got, n, "{}={} was accepted as {}", which, n, got);
        }
    }

    /// Job files: any text; no panic; errors name `file:line`.
    #[test]
    fn job_files_never_panic(lines in prop::collection::vec(prop_oneof![
        Just("[global]".to_string()),
        "\\[[ -~]{0,10}\\]?",
        (option_name(), hostile_number()).prop_map(|(k, v)| format!("{k}={v}")),
        option_name(),
        "[ -~]{0,20}",
        Just("include /etc/passwd".to_string()),
    ], 0..12)) {
        let text = lines.join("\n");
        let r = no_panic("parse_job_file", &text, || plumb::job::jobfile::parse_job_file(&text, "j.fio", &mut plumb::job::jobfile::Includes::default()))?;
        match r {
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("j.fio:") || msg.contains("/etc/passwd:"), "job file error without its place: {msg}");
            }
            Ok(sections) => {
                let jobs = no_panic("jobs_from_sections", &text, || plumb::job::jobfile::jobs_from_sections(&[], &sections, &plumb::job::expand::Keywords::of_this_machine()))?;
                if let Err(e) = jobs { named("jobs_from_sections", &text, &e.to_string())?; }
            }
        }
    }

    /// `plumb fio` command lines: no panic; errors say something.
    #[test]
    fn fio_command_lines_never_panic(args in prop::collection::vec(prop_oneof![
        (option_name(), hostile_number()).prop_map(|(k, v)| format!("--{k}={v}")),
        option_name().prop_map(|k| format!("--{k}")),
        hostile_number(),
        Just("--name=x".to_string()),
        Just("--output-format=json".to_string()),
        Just("--json".to_string()),
        Just("--".to_string()),
    ], 0..8)) {
        let input = format!("{args:?}");
        let r = no_panic("fio_cmd::parse_args", &input, || plumb::cli::fio::parse_args(&args))?;
        if let Err(e) = r { named("fio_cmd::parse_args", &input, &e.to_string())?; }
    }
}

// ---------------------------------------------------------------- pack.toml

fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        hostile_number().prop_map(|s| format!("{s:?}")),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("-1".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("true".to_string()),
        Just("[]".to_string()),
        Just("[\"ok.rhai\", \"../x.rhai\", \"/etc/passwd\", \".hidden\", \"\"]".to_string()),
        Just("{ a = 1 }".to_string()),
        Just("\"\\u001b[2J\"".to_string()),
        Just("[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]".to_string()),
    ]
}

proptest! {
    #![proptest_config(config(400, 0x1157_0003))]

    /// pack.toml with hostile values for every key: load_dir never panics
    /// and its errors say something.
    #[test]
    fn pack_manifests_never_panic(fields in prop::collection::vec((prop::sample::select(vec![
        "name", "version", "description", "scenarios", "data", "assert",
        "capabilities.max_bytes", "capabilities.net", "capabilities.direct_io",
        "capabilities.threads", "capabilities.root", "params.size.default",
        "params.size.unit", "params.n.default", "nonsense",
    ]), toml_value()), 0..10)) {
        let dir = tempfile::tempdir().unwrap();
        let mut top = String::from("name = \"p\"\nversion = \"1\"\ndescription = \"d\"\nscenarios = [\"ok.rhai\"]\n");
        let mut tables: std::collections::BTreeMap<String, String> = Default::default();
        for (k, v) in &fields {
            match k.rsplit_once('.') {
                None => top.push_str(&format!("{k} = {v}\n")),
                Some((t, key)) => tables.entry(t.to_string()).or_default().push_str(&format!("{key} = {v}\n")),
            }
        }
        for (t, body) in &tables {
            top.push_str(&format!("[{t}]\n{body}"));
        }
        std::fs::write(dir.path().join("pack.toml"), &top).unwrap();
        std::fs::write(dir.path().join("ok.rhai"), "report::metric(\"ok\", 1.0, \"\", \"higher\");").unwrap();
        let r = no_panic("pack::load_dir", &top, || plumb::scenario::pack::load_dir(dir.path()))?;
        match r {
            Err(e) => named("pack::load_dir", &top, &e.to_string())?,
            Ok(p) => {
                let m = no_panic("Capabilities::max_bytes", &top, || p.capabilities.max_bytes(&p.params_for(&Default::default())))?;
                if let Err(e) = m { named("Capabilities::max_bytes", &top, &e.to_string())?; }
            }
        }
    }
}

proptest! {
    #![proptest_config(config(2000, 0x1157_0004))]

    /// `max_bytes` sums over parameters: any text parses or is refused
    /// with a message, and any parameter value evaluates or is refused —
    /// never a panic or a wrapped sum.
    #[test]
    fn byte_budgets_never_panic_or_wrap(text in "[0-9 *+sizeGkMEn._-]{0,40}", value in hostile_number()) {
        use plumb::api::capabilities::ByteBudget;
        let parsed = no_panic("ByteBudget::parse", &text, || ByteBudget::parse(&text, &["size", "n"]))?;
        match parsed {
            Err(e) => named("ByteBudget::parse", &text, &e.to_string())?,
            Ok(b) => {
                let values = [("size".to_string(), value.clone()), ("n".to_string(), "3".to_string())].into_iter().collect();
                match no_panic("ByteBudget::eval", &text, || b.eval(&values))? {
                    Err(e) => named("ByteBudget::eval", &text, &e.to_string())?,
                    Ok(need) => prop_assert!(need.bytes < u64::MAX || text.contains('E'), "{text}: {}", need.bytes),
                }
            }
        }
    }
}

// ---------------------------------------------------------------- traces, strace logs, fio iologs

fn big() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..8192,
        Just(u64::MAX),
        Just(u64::MAX - 4095),
        Just(1u64 << 63),
        Just(i64::MAX as u64),
        Just(1u64 << 62),
        any::<u64>(),
    ]
}

fn trace_path() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,6}",
        Just("..".to_string()),
        Just(".".to_string()),
        Just("../../outside/x".to_string()),
        Just("/etc/passwd".to_string()),
        Just("%2e%2e/%2e%2e/y".to_string()),
        Just("a%00b".to_string()),
        Just("%zz".to_string()),
        Just("d/e/f".to_string()),
    ]
}

/// A trace text from the format's grammar with hostile numbers (may be invalid).
/// Mostly values inside a trace's bounds (so many generated traces parse and
/// reach the replay estimate), sometimes the edges of `big()`.
fn trace_number() -> impl Strategy<Value = u64> {
    prop_oneof![6 => 0u64..8192, 1 => big()]
}

fn trace_text() -> impl Strategy<Value = String> {
    let op = (
        0u32..3,
        trace_number(),
        trace_number(),
        0usize..36,
        0u32..4,
        trace_number(),
        trace_number(),
        prop::option::of(prop_oneof![
            Just("ENOENT"),
            Just("EEXIST"),
            Just("E4095"),
            Just("E0"),
            Just("ENOPE")
        ]),
    )
        .prop_map(|(thread, start, dur, kind, h, a, b, failed)| {
            let f = h % 3;
            let args = match kind {
                0 => format!("open {h} {f} rw,creat"),
                1 => format!("open {h} {f} r"),
                2 => format!("pread {h} {a} {b}"),
                3 => format!("pwrite {h} {a} {b}"),
                4 => format!("read {h} {a} {b}"),
                5 => format!("write {h} {a} {b}"),
                6 => format!("lseek {h} {a}"),
                7 => format!("fsync {h}"),
                8 => format!("ftruncate {h} {a}"),
                9 => format!("fallocate {h} {a} {b}"),
                10 => format!("close {h}"),
                11 => format!("copy {h} {} {b}", (h + 1) % 4),
                12 => format!("stat {f}"),
                13 => format!("unlink {f}"),
                14 => format!("mkdir {f}"),
                15 => format!("rename {f} {}", (f + 1) % 3),
                16 => format!("mmap {h} {a}"),
                17 => format!("sync_file_range {h} {a} {b}"),
                18 => format!("readv {h} {a} {b}"),
                19 => format!("rmdir {f}"),
                20 => format!("fstat {h}"),
                // Version-2 operations (refused by name in a version-1 trace).
                21 => format!("readdir {h} {a}"),
                22 => format!("dup {h} {}", (h + 1) % 4),
                23 => format!("inherit {h} {}", (h + 2) % 4),
                24 => format!("open {h} {f} r,dir"),
                25 => format!("symlink {f} %2e%2e/%2e%2e/{a}"),
                26 => format!("link {f} {}", (f + 1) % 3),
                27 => format!("chmod {f} {:o}", a),
                28 => format!("fchmod {h} {b}"),
                29 => format!("truncate {f} {a}"),
                30 => format!("readlink {f}"),
                31 => format!("rename {f} {} exchange", (f + 2) % 3),
                32 => format!("access {f}"),
                // Version 5: maps, with hostile offsets and lengths (of
                // a handle opened for them below; left out before
                // version 5).
                33 => format!("map H {a} {b} r"),
                34 => format!("map H {a} {b} w"),
                _ => format!("open {h} {f} rw,creat,trunc,direct,sync"),
            };
            let failed = failed.map_or(String::new(), |e| format!(" ={e}"));
            (start, format!("op {thread} {start} {dur} {args}{failed}"))
        });
    (
        trace_number(),
        prop::collection::vec((prop::option::of(trace_number()), trace_path()), 1..4),
        1usize..4,
        prop::collection::vec(op, 0..8),
        any::<bool>(),
        prop::collection::vec(
            prop_oneof![8 => Just("f"), 4 => Just("d"), 4 => Just("l"), 1 => Just("q")],
            4,
        ),
        prop_oneof![3 => 1u32..3, 1 => 3u32..6],
    )
        .prop_map(
            |(duration, files, threads, mut ops, end_ok, kinds, version)| {
                ops.sort_by_key(|(s, _)| *s);
                let mut t = format!("plumb-trace {version}\nduration_us {duration}\n");
                if version >= 2 {
                    t.push_str(&format!("tracer strace {duration} {}\n", ops.len()));
                }
                for (i, (size, path)) in files.iter().enumerate() {
                    let size = size.map_or("-".to_string(), |s| s.to_string());
                    match (version, kinds[i]) {
                        (1, _) => t.push_str(&format!("file {i} {size} {path}\n")),
                        (_, "l") => t.push_str(&format!("file {i} l {size} {path} %2fetc\n")),
                        (_, kind) => t.push_str(&format!("file {i} {kind} {size} {path}\n")),
                    }
                }
                for i in 0..threads {
                    t.push_str(&format!("thread {i} {}\n", 100 + i));
                }
                let mut records = 0;
                for (i, (_, o)) in ops.iter().enumerate() {
                    let mut o = o.clone();
                    if o.contains(" map H ") {
                        if version < 5 {
                            continue;
                        }
                        // Its own handle, opened just before it.
                        let h = 100 + i;
                        let head: Vec<&str> = o.split(' ').take(4).collect();
                        t.push_str(&format!("{} open {h} 0 rw\n", head.join(" ")));
                        records += 1;
                        o = o.replace(" map H ", &format!(" map {h} "));
                    }
                    t.push_str(&o);
                    t.push('\n');
                    records += 1;
                }
                let n = if end_ok { records } else { records + 1 };
                t.push_str(&format!("end {n}\n"));
                t
            },
        )
}

proptest! {
    #![proptest_config(config(1500, 0x1157_0004))]

    /// Traces: parse never panics; a parsed trace summarises, estimates its
    /// bytes without overflow and round-trips through its text form.
    #[test]
    fn traces_parse_summarise_and_round_trip(text in trace_text()) {
        let r = no_panic("Trace::parse", &text, || plumb::trace::Trace::parse("t.trace", &text))?;
        streams_as_parsed(&text, &r)?;
        match r {
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("t.trace"), "trace error without the file: {msg}");
            }
            Ok(t) => {
                no_panic("show::summarize", &text, || plumb::trace::show::render(&plumb::trace::show::summarize(&t)))?;
                no_panic("replay::bytes_needed", &text, || plumb::trace::budget::bytes_needed(&t))?;
                let again = no_panic("Trace::to_text", &text, || t.to_text())?;
                let back = plumb::trace::Trace::parse("t.trace", &again);
                prop_assert!(back.is_ok(), "to_text of a parsed trace does not parse: {:?}\n{again}", back.err());
                prop_assert_eq!(back.unwrap().to_text(), again);
            }
        }
    }

    /// Garbage lines in a trace: parse never panics and names the file.
    #[test]
    fn trace_garbage_never_panics(lines in prop::collection::vec(prop_oneof![
        "[ -~]{0,30}",
        ".{0,10}",
        (prop::sample::select(vec!["op", "file", "thread", "end", "duration_us"]), prop::collection::vec(hostile_number(), 0..7)).prop_map(|(k, v)| format!("{k} {}", v.join(" "))),
    ], 0..10)) {
        let text = format!("plumb-trace 1\n{}", lines.join("\n"));
        let r = no_panic("Trace::parse", &text, || plumb::trace::Trace::parse("g.trace", &text))?;
        streams_as_parsed(&text, &r)?;
        if let Err(e) = r {
            prop_assert!(e.to_string().contains("g.trace"), "{}", e);
        }
    }
}

/// A replay's reading of `text` (streamed, holding no operation) agrees
/// with [`plumb::trace::Trace::parse`]'s `parsed`: the same error on the
/// same line, or the same operations in order, the same head and the
/// same profile (the budget's estimates, buffers, think scale, lay-out).
fn streams_as_parsed(
    text: &str,
    parsed: &Result<plumb::trace::Trace, plumb::trace::TraceError>,
) -> Result<(), TestCaseError> {
    use plumb::trace::format::stream::Source;
    use plumb::trace::profile::{Prepared, Profile};
    let name = match parsed {
        Err(e) => e.file.clone(),
        Ok(_) => "t.trace".to_string(),
    };
    let source = Source::memory(&name, text);
    let never = plumb::halt::Halt::new(
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        None,
    );
    let streamed = no_panic("Prepared::read", text, || {
        Prepared::read(source.clone(), &never)
    })?;
    match (
        parsed,
        streamed.map_err(|e| match e {
            plumb::trace::profile::PrepareError::Trace(e) => e,
            other => panic!("{other}"),
        }),
    ) {
        (Err(want), Err(got)) => {
            prop_assert_eq!((got.line, &got.cause), (want.line, &want.cause), "{}", text);
        }
        (Ok(t), Ok(p)) => {
            prop_assert_eq!(&p.profile, &Profile::of(t), "{}", text);
            let mut head = t.clone();
            head.ops.clear();
            head.steps.starts.clear();
            prop_assert_eq!(&p.head, &head, "{}", text);
            let mut stream = source
                .stream()
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut ops = Vec::new();
            let mut starts = Vec::new();
            while let Some(op) = stream
                .next_op()
                .map_err(|e| TestCaseError::fail(e.to_string()))?
            {
                if let Some(id) = op.step {
                    starts.push((ops.len() as u32, id));
                }
                ops.push(op.op);
            }
            prop_assert_eq!(&ops, &t.ops, "{}", text);
            prop_assert_eq!(&starts, &t.steps.starts, "{}", text);
        }
        (want, got) => {
            return Err(TestCaseError::fail(format!(
                "parse says {:?}, the stream {:?}, of:\n{text}",
                want.as_ref().err(),
                got.err()
            )))
        }
    }
    Ok(())
}

/// One strace line from a grammar of the traced calls with hostile arguments.
fn strace_line() -> impl Strategy<Value = String> {
    let fd = prop_oneof![
        Just("3</r/a>".to_string()),
        Just("4</r/b>".to_string()),
        Just("99999999999</r/c>".to_string()),
        Just("-1".to_string()),
        "[0-9]{1,3}".prop_map(|s| s)
    ];
    let num = prop_oneof![hostile_number(), big().prop_map(|n| n.to_string())];
    (
        prop_oneof![Just(1234u64), Just(1235), any::<u64>()],
        prop_oneof![
            Just("1700000000.000100".to_string()),
            Just("-1.5".to_string()),
            Just("1e308".to_string()),
            Just("nan".to_string()),
            "[0-9]{1,12}\\.[0-9]{6}"
        ],
        prop::sample::select(vec![
            "openat",
            "open",
            "creat",
            "read",
            "pread64",
            "write",
            "pwrite64",
            "readv",
            "writev",
            "lseek",
            "fsync",
            "fdatasync",
            "ftruncate",
            "fallocate",
            "close",
            "newfstatat",
            "mmap",
            "copy_file_range",
            "sendfile",
            "rename",
            "renameat2",
            "unlinkat",
            "mkdirat",
            "rmdir",
            "chdir",
            "fchdir",
            "clone",
            "clone3",
            "vfork",
            "sync_file_range",
            "statx",
        ]),
        prop::collection::vec(
            prop_oneof![
                fd.clone(),
                num.clone(),
                Just("\"a.dat\"".to_string()),
                Just("\"../../x\"".to_string()),
                Just("\"\\x1b[2J\"".to_string()),
                Just("O_RDWR|O_CREAT|O_DIRECT".to_string()),
                Just("AT_FDCWD</r>".to_string()),
                Just("\"\"...".to_string()),
                Just("{flags=CLONE_VM}".to_string()),
                Just("{flags=CLONE_VM|CLONE_FILES|CLONE_THREAD}".to_string()),
                Just("PROT_READ|PROT_WRITE".to_string()),
                Just("MAP_SHARED".to_string()),
                Just("0xfffffffffffff000".to_string()),
                Just("0x".to_string())
            ],
            0..6,
        ),
        prop_oneof![
            fd,
            num,
            Just("-1 ENOENT (No such file or directory)".to_string()),
            Just("?".to_string())
        ],
        prop_oneof![
            Just(" <0.000010>".to_string()),
            Just(" <nan>".to_string()),
            Just(" <1e308>".to_string()),
            Just("".to_string()),
            Just(" <-1>".to_string())
        ],
        prop::sample::select(vec!["", " <unfinished ...>", "resumed"]),
    )
        .prop_map(|(pid, ts, call, args, ret, dur, tail)| match tail {
            " <unfinished ...>" => {
                format!("{pid} {ts} {call}({} <unfinished ...>", args.join(", "))
            }
            "resumed" => format!(
                "{pid} {ts} <... {call} resumed>{}) = {ret}{dur}",
                args.join(", ")
            ),
            _ => format!("{pid} {ts} {call}({}) = {ret}{dur}", args.join(", ")),
        })
}

proptest! {
    #![proptest_config(config(1500, 0x1157_0005))]

    /// strace logs: conversion never panics; a converted trace parses back
    /// and summarises.
    #[test]
    fn strace_logs_never_panic(lines in prop::collection::vec(prop_oneof![8 => strace_line(), 1 => "(1234|1235|[0-9]{1,20}) 1700000000\\.000[0-9]{3} \\+\\+\\+ (exited with 0|killed by SIGKILL) \\+\\+\\+", 1 => "[ -~]{0,40}", 1 => ".{0,8}"], 0..16),
                               root in prop::sample::select(vec!["/r", "/", "", "../.."]), cwd in prop::sample::select(vec!["/r", "/", "", "rel"])) {
        let log = lines.join("\n");
        let r = no_panic("strace::convert", &log, || plumb::trace::strace::convert("a.strace", &log, root, cwd, None))?;
        match r {
            Err(e) => prop_assert!(e.to_string().contains("a.strace"), "{}", e),
            Ok(t) => {
                no_panic("show::summarize", &log, || plumb::trace::show::render(&plumb::trace::show::summarize(&t)))?;
                no_panic("replay::bytes_needed", &log, || plumb::trace::budget::bytes_needed(&t))?;
                let text = t.to_text();
                let back = plumb::trace::Trace::parse("conv.trace", &text);
                prop_assert!(back.is_ok(), "an imported strace log gives an unreadable trace: {:?}\n{text}", back.err());
            }
        }
    }

    /// fio iologs (v2 and v3): conversion never panics; a converted trace parses back.
    #[test]
    fn fio_iologs_never_panic(v3 in any::<bool>(), lines in prop::collection::vec((
        big(),
        prop::sample::select(vec!["/d/a", "/d/b", "/", "a", "../../x", "/d/a b"]),
        prop::sample::select(vec!["add", "open", "close", "read", "write", "trim", "sync", "datasync", "wait", "bogus"]),
        prop::collection::vec(prop_oneof![big().prop_map(|n| n.to_string()), hostile_number()], 0..3),
    ), 0..14)) {
        let mut log = if v3 { "fio version 3 iolog\n" } else { "fio version 2 iolog\n" }.to_string();
        for (ts, path, action, args) in &lines {
            if v3 { log.push_str(&format!("{ts} ")); }
            log.push_str(&format!("{path} {action} {}\n", args.join(" ")));
        }
        let r = no_panic("iolog::convert", &log, || plumb::trace::iolog::convert("j.iolog", &log))?;
        match r {
            Err(e) => prop_assert!(e.to_string().contains("j.iolog"), "{}", e),
            Ok(t) => {
                no_panic("show::summarize", &log, || plumb::trace::show::render(&plumb::trace::show::summarize(&t)))?;
                no_panic("replay::bytes_needed", &log, || plumb::trace::budget::bytes_needed(&t))?;
                let text = t.to_text();
                let back = plumb::trace::Trace::parse("conv.trace", &text);
                prop_assert!(back.is_ok(), "an imported iolog gives an unreadable trace: {:?}\n{text}", back.err());
            }
        }
    }
}

// ---------------------------------------------------------------- result documents for compare

fn json_value(depth: u32) -> BoxedStrategy<serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| n.into()),
        any::<u64>().prop_map(|n| n.into()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| f.into()),
        Just(serde_json::json!(1.7e308)),
        Just(serde_json::json!(-1.7e308)),
        Just(serde_json::json!(5e-324)),
        "[ -~]{0,8}".prop_map(serde_json::Value::String),
        Just(serde_json::Value::String("\u{1b}[2J\u{9b}31m".into())),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    prop_oneof![
        3 => leaf,
        1 => prop::collection::vec(json_value(depth - 1), 0..4).prop_map(serde_json::Value::Array),
        1 => prop::collection::vec(json_value(depth - 1), 0..4).prop_map(serde_json::Value::Array),
    ]
    .boxed()
}

fn valid_doc(label: &str, samples: &[f64]) -> serde_json::Value {
    serde_json::json!({
        "schema": "plumb.result.v1", "plumb_version": "0.1.0", "label": label,
        "started": "2026-11-30T10:00:00+00:00", "finished": "2026-11-30T10:01:00+00:00",
        "host": { "hostname": "h", "os": "Linux", "kernel": "6", "arch": "x86_64",
                  "cpu_model": "c", "cpus": 4, "memory_bytes": 1u64 << 33 },
        "target": null,
        "scenarios": [{ "name": "s", "pack": "p", "source_sha256": null, "params": {}, "repeat": samples.len(),
                        "metrics": [{ "name": "m", "unit": "ns", "better": "lower",
                                      "value": samples.first().copied().unwrap_or(0.0), "samples": samples }],
                        "jobs": [], "tables": [], "error": null }]
    })
}

/// Every JSON pointer to a value in `v`.
fn pointers(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                pointers(x, format!("{at}/{k}"), out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                pointers(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Writes a document to a temporary file that lives as long as the process.
fn write_doc(doc: &serde_json::Value) -> std::path::PathBuf {
    let file = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(file.path(), serde_json::to_string(doc).unwrap()).unwrap();
    let (_, path) = file.keep().unwrap();
    path
}

/// A Rhai expression for a template's text: plain, with terminal controls,
/// long, a number, unit, or not text at all.
fn template_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"plain\"".to_string()),
        Just("\"\\x1b[2J\\x9b1m\\u202e|pipe\"".to_string()),
        Just("\"a,\\\"b\\\"\\r\\nc\"".to_string()),
        Just("\"x\".pad(5000, \"y\")".to_string()),
        Just("42".to_string()),
        Just("()".to_string()),
        Just("[1, 2]".to_string()),
    ]
}

fn template_cell() -> impl Strategy<Value = String> {
    prop_oneof![template_text(), rhai_value()]
}

fn finite_sample() -> impl Strategy<Value = f64> {
    prop_oneof![
        0.0f64..1e6,
        Just(0.0),
        Just(-1.0),
        Just(1.7e308),
        Just(-1.7e308),
        Just(5e-324),
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
    ]
}

proptest! {
    #![proptest_config(config(600, 0x1157_0006))]

    /// A valid document with one field replaced by hostile JSON: load never
    /// panics and names the file; what loads compares and renders in every
    /// format without panic, and the terminal table carries no ESC.
    #[test]
    fn result_documents_never_panic(pick in any::<prop::sample::Index>(), value in json_value(3),
                                    a in prop::collection::vec(finite_sample(), 0..6),
                                    b in prop::collection::vec(finite_sample(), 0..6)) {
        let mut doc = valid_doc("a", &a);
        let mut ptrs = Vec::new();
        pointers(&doc, String::new(), &mut ptrs);
        let ptr = pick.get(&ptrs).clone();
        if ptr.is_empty() { doc = value.clone(); } else if let Some(slot) = doc.pointer_mut(&ptr) { *slot = value.clone(); }
        let dir = tempfile::tempdir().unwrap();
        let pa = dir.path().join("a.json");
        let pb = dir.path().join("b.json");
        let text = serde_json::to_string(&doc).unwrap();
        std::fs::write(&pa, &text).unwrap();
        std::fs::write(&pb, serde_json::to_string(&valid_doc("b", &b)).unwrap()).unwrap();
        let input = format!("{ptr} = {value}");
        let da = no_panic("compare::load::load", &input, || plumb::compare::load::load(&pa))?;
        let db = plumb::compare::load::load(&pb).map_err(|e| TestCaseError::fail(e.to_string()))?;
        match da {
            Err(e) => prop_assert!(e.to_string().contains("a.json"), "load error does not name the file: {e}"),
            Ok(da) => {
                let docs = vec![da, db];
                let c = no_panic("compare::compare", &input, || plumb::compare::compare(&docs))?
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                for f in [plumb::report::run_table::Format::Table, plumb::report::run_table::Format::Markdown, plumb::report::run_table::Format::Csv, plumb::report::run_table::Format::Json] {
                    let out = no_panic("compare::render::render", &input, || plumb::report::comparison::render(&c, &docs, f))?;
                    if f == plumb::report::run_table::Format::Table {
                        prop_assert!(!out.contains('\u{1b}') && !out.contains('\u{9b}'), "raw ESC/CSI in the terminal table for {input}");
                    }
                }
                no_panic("compare::regressions", &input, || plumb::compare::regressions(&c, 10.0, false))?;
                // What a template receives, and cloud-compare's template on it.
                let t_input = no_panic("TemplateInput::new", &input, || plumb::model::template::TemplateInput::new(&docs, &c))?;
                let template = plumb::scenario::template::Template::from_arg("cloud-compare").map_err(|e| TestCaseError::fail(e.to_string()))?;
                let made = no_panic("cloud-compare's template", &input, || template.render(&t_input))?;
                prop_assert!(made.is_ok(), "cloud-compare's template failed on {input}: {made:?}");
            }
        }
    }

    /// Whatever a Rhai template's render returns, the conversion to tables
    /// never panics; what it accepts is within the limits and renders in
    /// every format without a raw ESC/CSI.
    #[test]
    fn template_returns_never_panic(title in template_text(), header in prop::collection::vec(template_cell(), 0..4),
                                    rows in prop::collection::vec(prop::collection::vec(template_cell(), 0..5), 0..4),
                                    notes in template_cell(), extra in rhai_value(), shape in 0..6u8) {
        let table = format!("#{{ title: {title}, header: [{}], rows: [{}], notes: {notes} }}",
            header.join(", "),
            rows.iter().map(|r| format!("[{}]", r.join(", "))).collect::<Vec<_>>().join(", "));
        let ret = match shape {
            0 => table,
            1 => format!("[{table}, {table}]"),
            2 => extra,
            3 => format!("[{table}, {extra}]"),
            4 => format!("#{{ title: {title}, header: {extra}, rows: [] }}"),
            _ => format!("#{{ title: {title}, header: [\"a\"], rows: {extra}, colour: 1 }}"),
        };
        let source = format!("fn render(c) {{ {ret} }}");
        let docs = vec![plumb::compare::load::load(&write_doc(&valid_doc("a", &[1.0, 2.0]))).map_err(|e| TestCaseError::fail(e.to_string()))?];
        let c = plumb::compare::compare(&docs).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let input = plumb::model::template::TemplateInput::new(&docs, &c);
        let out = no_panic("script::template::render", &source, || plumb::script::template::render("t.rhai", &source, &input))?;
        match out {
            Err(e) => prop_assert!(e.to_string().starts_with("t.rhai"), "error does not name the template: {e}"),
            Ok(tables) => {
                prop_assert!(plumb::model::template::check_tables(&tables).is_ok());
                for f in [plumb::report::run_table::Format::Table, plumb::report::run_table::Format::Markdown, plumb::report::run_table::Format::Csv, plumb::report::run_table::Format::Json] {
                    let text = no_panic("made_tables::render", &source, || plumb::report::made_tables::render(&tables, "t.rhai", &c, f))?;
                    prop_assert!(!text.contains('\u{1b}') && !text.contains('\u{9b}'), "raw ESC/CSI in {f:?} for {source}");
                }
            }
        }
    }

    /// The bootstrap on any finite samples: no panic, and an interval that is
    /// ordered when there is one.
    #[test]
    fn bootstrap_never_panics(a in prop::collection::vec(finite_sample(), 0..40), b in prop::collection::vec(finite_sample(), 0..40)) {
        let input = format!("{a:?} vs {b:?}");
        let ci = no_panic("ratio_ci", &input, || plumb::compare::stats::ratio_ci(&a, &b))?;
        if let Some((lo, hi)) = ci {
            prop_assert!(lo.partial_cmp(&hi) != Some(std::cmp::Ordering::Greater), "interval ({lo}, {hi}) is reversed for {input}");
        }
        no_panic("median", &input, || plumb::compare::stats::median(&a))?;
    }
}

// ---------------------------------------------------------------- plumb serve's request line

proptest! {
    #![proptest_config(config(3000, 0x1157_0007))]

    /// Any request line: no panic, and errors say something.
    #[test]
    fn request_lines_never_panic(line in prop_oneof![
        ".{0,40}",
        (prop::sample::select(vec!["PLUMB/1", "PLUMB/2", "plumb/1", ""]), "[0-9a-fA-FxX-]{0,20}", prop::sample::select(vec!["sink", "source", "echo", "ECHO", ""]), hostile_number(), prop::sample::select(vec!["", "\r", " ", "\t", "\0", " extra"]))
            .prop_map(|(m, s, v, n, tail)| format!("{m} {s} {v} {n}{tail}")),
    ]) {
        let r = no_panic("Opening::parse", &line, || plumb::net::protocol::Opening::parse(&line))?;
        if let Err(e) = r { named("Opening::parse", &line, &e.to_string())?; }
        let mut bytes: &[u8] = line.as_bytes();
        let _ = no_panic("read_line", &line, || plumb::net::protocol::read_line(&mut bytes))?;
    }

    /// Every request a client sends parses back to itself, also with the
    /// CRLF line ending a telnet-style client sends.
    #[test]
    fn request_lines_round_trip(session in any::<u64>(), kind in 0u8..3, n in 1u64..=plumb::net::protocol::MAX_ECHO, crlf in any::<bool>()) {
        use plumb::net::protocol::{Opening, Request};
        let request = match kind { 0 => Request::Sink, 1 => Request::Source, _ => Request::Echo(n) };
        let o = Opening { session, request };
        let line = o.line();
        let mut wire = line.trim_end_matches('\n').to_string();
        if crlf { wire.push('\r'); }
        wire.push('\n');
        let mut bytes: &[u8] = wire.as_bytes();
        let read = plumb::net::protocol::read_line(&mut bytes).map_err(|e| TestCaseError::fail(e.to_string()))?.unwrap();
        let back = Opening::parse(&read);
        prop_assert_eq!(back, Ok(o), "the request line {:?} does not parse back", wire);
    }
}

// ---------------------------------------------------------------- host functions, through the binary

/// Values a script could pass for any option: boundary integers, NaN and
/// infinities, sizes with suffixes, paths that climb out, wrong types.
fn rhai_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("1".to_string()),
        Just("64".to_string()),
        Just("4294967295".to_string()),
        Just("4294967296".to_string()),
        Just("9223372036854775807".to_string()),
        Just("-9223372036854775808".to_string()),
        Just("(0.0/0.0)".to_string()),
        Just("(1.0/0.0)".to_string()),
        Just("(-1.0/0.0)".to_string()),
        Just("1e19".to_string()),
        Just("1e-300".to_string()),
        Just("0.5".to_string()),
        Just("\"4k\"".to_string()),
        Just("\"1G\"".to_string()),
        Just("\"16E\"".to_string()),
        Just("\"1P\"".to_string()),
        Just("\"nan\"".to_string()),
        Just("\"-5\"".to_string()),
        Just("\"99999999999999999999h\"".to_string()),
        Just("\"10s\"".to_string()),
        Just("\"../../outside/p\"".to_string()),
        Just("\"{outside}/p\"".to_string()),
        Just("\"\"".to_string()),
        Just("\"zipf:nan\"".to_string()),
        Just("\"127.0.0.1:1\"".to_string()),
        Just("true".to_string()),
        Just("()".to_string()),
        Just("[1, [2, [3]]]".to_string()),
        Just("#{ a: #{ b: 1 } }".to_string()),
    ]
}

/// A call of a host function with a map of its options (and some unknown keys).
fn host_call(func: &'static str, keys: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec((prop::sample::select(keys.to_vec()), rhai_value()), 0..5).prop_map(
        move |kv| {
            let body: Vec<String> = kv.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            format!("{func}(#{{ {} }});", body.join(", "))
        },
    )
}

/// Runs `script` through `plumb run` with a 2 s deadline and a 4 MiB byte
/// budget, under memory and file-size limits; checks the property.
fn run_script(script: &str) -> Result<(), TestCaseError> {
    let tmp = tempfile::Builder::new()
        .prefix("plumb-props-")
        .tempdir_in(
            std::env::var_os("PLUMB_TEST_DIR")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(std::env::temp_dir),
        )
        .unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (target, outside, logs) = (root.join("target"), root.join("outside"), root.join("logs"));
    for d in [&target, &outside, &logs] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(outside.join("canary"), "canary").unwrap();
    std::fs::write(outside.join("p.0.0"), "victim").unwrap();
    let script = script.replace("{outside}", &outside.display().to_string());
    std::fs::write(root.join("s.rhai"), &script).unwrap();
    let args: Vec<String> = [
        "run",
        "s.rhai",
        "--target",
        target.to_str().unwrap(),
        "--timeout",
        "2s",
        "--max-bytes",
        "4M",
        "--allow-net",
        "127.0.0.1:1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let r = crate::hostile::run_limited(
        &args,
        &root,
        &root.join("cache"),
        &logs,
        crate::hostile::Limits {
            kill_after: 6.0,
            mem_gib: 4,
            fsize_mib: 64,
        },
        None,
    );
    let mut problems = Vec::new();
    match r.status {
        None => problems.push(format!(
            "hung past the 2 s deadline (killed after {:.1} s)",
            r.secs
        )),
        Some(s) => {
            use std::os::unix::process::ExitStatusExt;
            match (s.code(), s.signal()) {
                (Some(c), _) if ![0, 1, 2].contains(&c) => problems.push(format!("exit {c}")),
                (Some(c), _) if c != 0 && r.stderr.trim().is_empty() => {
                    problems.push("failed silently".into())
                }
                (None, Some(sig)) => problems.push(format!("killed by signal {sig}")),
                _ => {}
            }
        }
    }
    for t in [
        "panicked",
        "RUST_BACKTRACE",
        "overflowed its stack",
        "memory allocation of",
    ] {
        if r.stderr.contains(t) || r.stdout.contains(t) {
            let line = r.stderr.lines().find(|l| l.contains(t)).unwrap_or("");
            problems.push(format!("output contains {t:?}: {line}"));
        }
    }
    let outside_now = crate::util::entries(&outside);
    if outside_now != ["canary", "p.0.0"]
        || std::fs::read_to_string(outside.join("canary"))
            .ok()
            .as_deref()
            != Some("canary")
    {
        problems.push(format!("outside changed: {outside_now:?}"));
    }
    let left = crate::util::entries(&target);
    if !left.is_empty() {
        problems.push(format!("left in the target: {left:?}"));
    }
    let beside: Vec<String> = crate::util::entries(&root)
        .into_iter()
        .filter(|n| !["target", "outside", "logs", "cache", "s.rhai"].contains(&n.as_str()))
        .collect();
    if !beside.is_empty() {
        problems.push(format!("created beside the target: {beside:?}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(TestCaseError::fail(format!(
            "{}\nscript: {script}\nstderr: {}",
            problems.join("; "),
            r.stderr.chars().take(600).collect::<String>()
        )))
    }
}

const JOB_KEYS: &[&str] = &[
    "name",
    "filename",
    "rw",
    "bs",
    "bsrange",
    "bssplit",
    "size",
    "filesize",
    "io_size",
    "offset",
    "nrfiles",
    "iodepth",
    "numjobs",
    "ioengine",
    "direct",
    "runtime",
    "time_based",
    "ramp_time",
    "loops",
    "fsync",
    "rate_iops",
    "rate",
    "random_distribution",
    "rwmixread",
    "unlink",
    "verify",
    "write_iolog",
    "directory",
    "zonk",
];

proptest! {
    #![proptest_config(config(14, 0x1157_0008))]

    #[test]
    fn io_job_arguments(call in host_call("io::job", JOB_KEYS)) {
        // A null-engine job so a valid one finishes at once.
        run_script(&call.replacen("#{ ", "#{ ioengine: \"null\", ", 1).replace("#{  }", "#{ ioengine: \"null\" }"))?;
    }

    #[test]
    fn io_job_file_arguments(call in host_call("io::job", JOB_KEYS)) {
        run_script(&call)?;
    }

    /// A background job from hostile options, then every handle method;
    /// and a group of two hostile jobs with a hostile group_reporting.
    #[test]
    fn io_start_and_group_arguments(start in host_call("io::start", JOB_KEYS),
                                    a in host_call("io::job", JOB_KEYS), b in host_call("io::job", JOB_KEYS),
                                    merged in rhai_value(), which in 0usize..2) {
        let map = |call: &str| call.trim_start_matches("io::job(").trim_end_matches(");").to_string();
        let script = if which == 0 {
            format!("let h = {}\nh.name(); h.done(); h.progress(); h.stop(); h.wait(); h.done();", start)
        } else {
            format!("io::group([{}, {}], #{{ group_reporting: {merged} }});", map(&a), map(&b))
        };
        run_script(&script)?;
    }

    /// A background copy, CPU kernel or throughput test from hostile
    /// options, then every handle method.
    #[test]
    fn background_task_arguments(start in prop_oneof![
        (rhai_value(), rhai_value(), rhai_value())
            .prop_map(|(a, b, c)| format!("fs::write_file(\"f\", 65536); let h = fs::start_copy(\"f\", {a}, #{{ bs: {b}, method: {c} }});")),
        host_call("cpu::start", &["kernel", "threads", "duration", "baseline", "n", "items", "buffer", "cpu_max_prime"])
            .prop_map(|c| format!("let h = {c}")),
        host_call("net::start_throughput", &["addr", "streams", "duration", "direction", "buffer"])
            .prop_map(|c| format!("let h = {}", c.replace("addr: \"127.0.0.1:1\"", "addr: net::local_peer()"))),
    ]) {
        run_script(&format!("{start}\nh.name(); h.done(); h.progress(); h.stop(); h.wait(); h.done();"))?;
    }

    #[test]
    fn cpu_run_arguments(call in prop_oneof![
        host_call("cpu::run", &["kernel", "threads", "duration", "baseline", "n", "items", "buffer", "cpu_max_prime"]),
        (prop::sample::select(vec!["prime", "sha256", "blake3", "lz4-compress", "lz4-decompress", "sort-u64", "sort-string", "matmul", "json-parse", "json-serialize"]),
         prop::sample::select(vec!["n", "items", "buffer", "cpu_max_prime"]), rhai_value(), rhai_value())
            .prop_map(|(k, p, v, t)| format!("cpu::run(#{{ kernel: \"{k}\", duration: 0.2, {p}: {v}, threads: {t} }});")),
    ]) {
        run_script(&call)?;
    }

    #[test]
    fn mem_arguments(call in prop_oneof![
        host_call("mem::bandwidth", &["oper", "block_size", "total_size", "scope", "threads", "duration"]),
        host_call("mem::latency", &["min_size", "max_size", "steps_per_doubling", "time_per_size"]),
    ]) {
        run_script(&call)?;
    }

    #[test]
    fn net_arguments(call in prop_oneof![
        host_call("net::throughput", &["addr", "streams", "duration", "direction", "buffer"]),
        host_call("net::rtt", &["addr", "count", "size", "interval"]),
        host_call("net::connect_time", &["addr", "count", "timeout", "interval"]),
        host_call("net::wait_for_port", &["addr", "timeout", "interval"]),
    ].prop_map(|c| c.replace("addr: \"127.0.0.1:1\"", "addr: net::local_peer()"))) {
        run_script(&call)?;
    }

    #[test]
    fn fs_arguments(a in rhai_value(), b in rhai_value(), c in rhai_value(), which in 0usize..16) {
        let call = match which {
            0 => format!("fs::write_file({a}, {b}, #{{ bs: {c} }});"),
            1 => format!("fs::write_file(\"f\", 4096); fs::read_file(\"f\", #{{ bs: {a}, direct: {b} }});"),
            2 => format!("fs::write_file(\"f\", 4096); fs::copy(\"f\", {a}, #{{ bs: {b}, method: {c} }});"),
            3 => format!("fs::create_files({a}, {b}, {c});"),
            4 => format!("let f = fs::open(\"f\", #{{ write: true, create: true, read: true }}); f.write_at({a}, {b}); f.read_at({b}, {c});"),
            5 => format!("let f = fs::open(\"f\", #{{ write: true, create: true }}); f.truncate({a}); f.fallocate({b}); f.append({c});"),
            6 => format!("fs::open({a}, #{{ write: {b}, create: true, truncate: {c}, pattern: {a} }});"),
            7 => format!("fs::write_file(\"f\", 4096); fs::rename({a}, {b});"),
            8 => format!("fs::mkdir({a}); fs::remove_all({b}); fs::remove({c});"),
            9 => format!("fs::list({a}); fs::stat({b}); fs::exists({c});"),
            10 => format!("fs::evict({a}); fs::stat_files({b}); fs::remove_files({c}); fs::fsync_dir({a});"),
            11 => format!("time::sleep({a});"),
            13 => format!("fs::create_files(\"d\", 4, 4096, #{{ threads: {a}, write_size: {b}, fsync: {c}, dirs: {a} }});"),
            14 => format!("fs::create_files(\"d\", {a}, {b}, #{{ threads: 2, dirs: {c} }});"),
            12 => format!("report::metric({a}, {b}, {c}, {a}); report::note({b}); report::table({a}, {b}, {c}); report::series({a}, {b}, {c}); report::series(\"s\", \"u\", [[{a}, {b}], [{c}]]);"),
            _ => format!("trace::replay({a}, #{{ speed: {b}, threads: {c} }});"),
        };
        run_script(&call)?;
    }
}

/// The corpus files parse as what they claim to be only where they should:
/// a sanity check that the property generators reach the parsers' happy
/// paths too (otherwise a property could pass by always erroring early).
#[test]
fn generators_reach_valid_inputs() {
    let mut runner = proptest::test_runner::TestRunner::new(config(1, 0x1157_0009));
    let (mut ok, mut v2, mut maps) = (0, 0, 0);
    for _ in 0..2000 {
        let t = trace_text().new_tree(&mut runner).unwrap().current();
        if plumb::trace::Trace::parse("t", &t).is_ok() {
            ok += 1;
            // Version-2 records (failed calls, duplicates, directories) parse
            // too, in traces of version 2 and later.
            if !t.starts_with("plumb-trace 1")
                && [" =E", " dup ", " readdir ", " symlink "]
                    .iter()
                    .any(|w| t.contains(w))
            {
                v2 += 1;
            }
            if t.starts_with("plumb-trace 5") && t.contains(" map ") {
                maps += 1;
            }
        }
    }
    assert!(
        ok >= 60 && v2 >= 2 && maps >= 1,
        "only {ok} of 2000 generated traces parse ({v2} with version-2 records, {maps} with maps): the trace property would test errors only"
    );
    let good = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/hostile/traces/small.trace"
    ));
    let text = std::fs::read_to_string(good).unwrap();
    assert!(plumb::trace::Trace::parse("small", &text).is_ok());
    let accepted = (0..1000)
        .filter(|_| {
            let t = inventory_text().new_tree(&mut runner).unwrap().current();
            plumb::fleet::inventory::parse_toml("inv.toml", &t).is_ok()
        })
        .count();
    assert!(
        accepted >= 20,
        "only {accepted} of 1000 generated inventories parse: the inventory property would test errors only"
    );
    let listed = (0..1000)
        .filter(|_| {
            let t = ansible_listing().new_tree(&mut runner).unwrap().current();
            plumb::fleet::inventory::ansible::parse_list("inv.ini", t.as_bytes()).is_ok()
        })
        .count();
    assert!(
        listed >= 20,
        "only {listed} of 1000 generated Ansible listings parse: the listing property would test errors only"
    );
}

// ---------------------------------------------------------------- fleet inventories, host specs, the agent protocol

/// Words an inventory field might hold: plain ones and attacks on ssh, the
/// remote shell, file names and terminals.
fn inventory_word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_string()),
        Just("10.0.0.2".to_string()),
        Just("fe80::1%eth0".to_string()),
        Just("-oProxyCommand=touch pwned".to_string()),
        Just("../../x".to_string()),
        Just(".hidden".to_string()),
        Just("a b".to_string()),
        Just("a;rm -rf ~".to_string()),
        Just("$(id)".to_string()),
        Just("'\"".to_string()),
        Just("\u{1b}[2J".to_string()),
        Just("x\ny".to_string()),
        Just(String::new()),
        Just("a".repeat(300)),
        // Labels: KEY=VALUE, a machine field's name as the key, cut ones.
        Just("zone=eu-west-1a".to_string()),
        Just("kernel=6.1".to_string()),
        Just("a=b=c".to_string()),
        Just("=x".to_string()),
        Just("zone=-oProxyCommand=x".to_string()),
        "[a-z0-9.:_%@\\[\\]-]{0,12}",
        any::<String>(),
    ]
}

/// A TOML value for an inventory key.
fn inventory_value() -> impl Strategy<Value = String> {
    prop_oneof![
        inventory_word().prop_map(|s| toml::Value::String(s).to_string()),
        inventory_word().prop_map(|s| format!("{s:?}")),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("[\"x\", \"-y\", \"../z\"]".to_string()),
        Just("[]".to_string()),
        Just("true".to_string()),
    ]
}

/// A TOML inventory of 0-3 hosts with hostile values for every key: each
/// host has an address (often a valid one) and a few other distinct keys.
fn inventory_text() -> impl Strategy<Value = String> {
    let keys = vec![
        "name",
        "user",
        "port",
        "identity",
        "target",
        "cache",
        "net_address",
        "labels",
        "nonsense",
    ];
    let address = prop_oneof![
        3 => Just("\"10.0.0.2\"".to_string()),
        1 => inventory_value(),
    ];
    let host = (
        address,
        prop::sample::subsequence(keys, 0..4),
        prop::collection::vec(inventory_value(), 4),
    );
    prop::collection::vec(host, 0..4).prop_map(|hosts| {
        let mut text = String::new();
        for (i, (address, keys, values)) in hosts.iter().enumerate() {
            text.push_str(&format!("[[host]]\naddress = {address}\n"));
            for (k, v) in keys.iter().zip(values) {
                text.push_str(&format!("{k} = {v}\n"));
            }
            // A name of its own, so that hosts with one address can differ.
            if !keys.contains(&"name") {
                text.push_str(&format!("name = \"h{i}\"\n"));
            }
        }
        text
    })
}

/// An `ansible-inventory --list` listing: 0-4 hosts with hostile names and
/// hostile values for the variables plumb maps, and 0-4 groups whose
/// members and children may be missing, repeated or cyclic.
fn ansible_listing() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        inventory_word().prop_map(serde_json::Value::String),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
        Just(serde_json::json!({"nested": ["x"]})),
        // plumb_labels' forms: a mapping, a list, twice the same key.
        inventory_word().prop_map(|w| serde_json::json!({ "zone": w })),
        inventory_word().prop_map(|w| serde_json::json!([w])),
        Just(serde_json::json!(["zone=a", "zone=b"])),
    ];
    let var = prop::sample::select(vec![
        "ansible_host",
        "ansible_port",
        "ansible_user",
        "ansible_ssh_private_key_file",
        "ansible_connection",
        "plumb_target",
        "plumb_cache",
        "plumb_net_address",
        "plumb_labels",
        "other",
    ]);
    let host = (
        prop_oneof![2 => Just("h".to_string()), 1 => inventory_word()],
        prop::collection::vec((var, value), 0..4),
    );
    let group = (
        prop::sample::select(vec!["all", "ungrouped", "g1", "g2", "-g", "../g"]),
        prop::collection::vec(0usize..5, 0..4),
        prop::collection::vec(
            prop::sample::select(vec!["all", "g1", "g2", "missing", "-g"]),
            0..3,
        ),
    );
    (
        prop::collection::vec(host, 0..5),
        prop::collection::vec(group, 0..5),
    )
        .prop_map(|(hosts, groups)| {
            // Host names told apart by their position, as Ansible's are unique.
            let named: Vec<(String, _)> = hosts
                .into_iter()
                .enumerate()
                .map(|(i, (n, vars))| (format!("{n}{i}"), vars))
                .collect();
            let hostvars: serde_json::Map<String, serde_json::Value> = named
                .iter()
                .map(|(n, vars)| {
                    let vars = vars
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.clone()))
                        .collect();
                    (n.clone(), serde_json::Value::Object(vars))
                })
                .collect();
            let mut listing = serde_json::Map::new();
            listing.insert("_meta".into(), serde_json::json!({ "hostvars": hostvars }));
            for (name, members, children) in &groups {
                let members: Vec<&str> = members
                    .iter()
                    .filter_map(|i| named.get(*i).map(|h| h.0.as_str()))
                    .collect();
                listing.insert(
                    name.to_string(),
                    serde_json::json!({ "hosts": members, "children": children }),
                );
            }
            serde_json::Value::Object(listing).to_string()
        })
}

/// Checks what an accepted host promises: a name that is a plain file
/// name, an address and user ssh cannot read as options, remote paths
/// without control characters.
fn host_is_safe(h: &plumb::fleet::inventory::Host, input: &str) -> Result<(), TestCaseError> {
    let plain = |s: &str| {
        !s.is_empty()
            && !s.starts_with(['.', '-'])
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    prop_assert!(plain(&h.name), "name {:?} accepted from {input:?}", h.name);
    prop_assert!(
        !h.address.starts_with('-')
            && !h
                .address
                .chars()
                .any(|c| c.is_whitespace() || c.is_control()),
        "address {:?} from {input:?}",
        h.address
    );
    if let Some(u) = &h.user {
        prop_assert!(plain(u), "user {u:?} from {input:?}");
    }
    for p in [&h.target, &h.cache] {
        prop_assert!(
            !p.is_empty() && !p.chars().any(char::is_control),
            "path {p:?} from {input:?}"
        );
    }
    // Labels: a plain tag, or KEY=VALUE of plain parts whose key is no
    // machine field's name, each key once.
    let mut keys = std::collections::BTreeSet::new();
    for l in &h.labels {
        match l.split_once('=') {
            None => prop_assert!(plain(l), "label {l:?} from {input:?}"),
            Some((k, v)) => {
                prop_assert!(
                    plain(k) && plain(v) && !plumb::report::many::GROUP_FIELDS.contains(&k),
                    "label {l:?} from {input:?}"
                );
                prop_assert!(keys.insert(k), "key {k:?} twice from {input:?}");
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(600, 0x1157_0010))]

    /// TOML inventories with hostile values for every key: no panic, errors
    /// that say something, and every accepted host safe to hand to ssh.
    #[test]
    fn inventories_never_panic(text in inventory_text()) {
        let r = no_panic("inventory::parse_toml", &text, || plumb::fleet::inventory::parse_toml("inv.toml", &text))?;
        match r {
            Err(e) => named("inventory::parse_toml", &text, &e.to_string())?,
            Ok(hosts) => for h in &hosts { host_is_safe(h, &text)?; },
        }
    }

    /// PerfKitBenchmarker machine lists with hostile values.
    #[test]
    fn pkb_inventories_never_panic(machines in prop::collection::vec(prop::collection::vec((prop::sample::select(vec![
        "ip_address", "user_name", "keyfile_path", "ssh_port", "internal_ip", "zone", "os_type",
    ]), prop_oneof![
        inventory_word().prop_map(serde_json::Value::String),
        any::<i64>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
        Just(serde_json::json!(["/scratch", 1])),
    ]), 0..7), 0..4)) {
        let list: Vec<serde_json::Value> = machines.iter().map(|m| {
            serde_json::Value::Object(m.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
        }).collect();
        let text = serde_json::Value::Array(list).to_string();
        let r = no_panic("inventory::parse_pkb", &text, || plumb::fleet::inventory::parse_pkb("vms.json", &text))?;
        match r {
            Err(e) => named("inventory::parse_pkb", &text, &e.to_string())?,
            Ok(hosts) => for h in &hosts { host_is_safe(h, &text)?; },
        }
    }

    /// `ansible-inventory --list` listings with hostile host names, values
    /// for every variable plumb maps, and groups that nest, repeat, name
    /// missing children or form cycles.
    #[test]
    fn ansible_listings_never_panic(text in ansible_listing()) {
        let r = no_panic("ansible::parse_list", &text, || plumb::fleet::inventory::ansible::parse_list("inv.ini", text.as_bytes()))?;
        match r {
            Err(e) => named("ansible::parse_list", &text, &e.to_string())?,
            Ok(hosts) => for h in &hosts { host_is_safe(h, &text)?; },
        }
    }

    /// `-H` specs.
    #[test]
    fn host_specs_never_panic(specs in prop::collection::vec(inventory_word(), 1..4)) {
        let input = format!("{specs:?}");
        let r = no_panic("inventory::parse_specs", &input, || plumb::fleet::inventory::parse_specs(&specs))?;
        match r {
            Err(e) => named("inventory::parse_specs", &input, &e.to_string())?,
            Ok(hosts) => for h in &hosts { host_is_safe(h, &input)?; },
        }
    }

    /// The agent protocol's readers on arbitrary bytes: no panic, no read
    /// past what was announced, no allocation beyond the bound.
    #[test]
    fn protocol_frames_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600), head in prop_oneof![
        Just("plumb-fleet-result 0 ".to_string()),
        Just("plumb-fleet-payload x.rhai ".to_string()),
        Just("plumb-fleet-agent 12 /tmp/x".to_string()),
        Just(String::new()),
    ], len in prop_oneof![Just(0u64), Just(5), Just(u64::MAX), 0u64..1000]) {
        use plumb::fleet::protocol;
        let mut input = head.clone().into_bytes();
        input.extend_from_slice(len.to_string().as_bytes());
        input.push(b'\n');
        input.extend_from_slice(&bytes);
        let shown = String::from_utf8_lossy(&input).into_owned();
        no_panic("protocol", &shown, || {
            use std::io::Seek;
            let mut r = std::io::BufReader::new(std::io::Cursor::new(&input));
            if let Ok(Some(line)) = protocol::read_line(&mut r) {
                for kind in [protocol::RESULT, protocol::PAYLOAD, protocol::AGENT] {
                    if let Some(f) = protocol::fields(&line, kind) {
                        if let Some(n) = f.last().and_then(|n| n.parse::<u64>().ok()) {
                            // Streamed or read whole, the same bytes or
                            // the same refusal.
                            let at = r.stream_position().expect("a cursor's position");
                            let mut streamed = Vec::new();
                            let copied = protocol::copy_counted(&mut r, n, 1 << 20, &mut streamed);
                            r.seek(std::io::SeekFrom::Start(at)).expect("a cursor seeks");
                            match protocol::read_counted(&mut r, n, 1 << 20) {
                                Ok(b) => {
                                    assert_eq!(b.len() as u64, n);
                                    assert!(copied.is_ok());
                                    assert_eq!(streamed, b);
                                }
                                Err(_) => assert!(copied.is_err()),
                            }
                        }
                    }
                }
            }
        })?;
    }
}

// ---------------------------------------------------------------- dbench load files

/// dbench load-file lines: every operation, paths that stay, climb, name
/// another client or the clients directory, hostile numbers and statuses.
fn dbench_text() -> impl Strategy<Value = String> {
    let path = prop_oneof![
        8 => Just("\\clients\\client1\\f".to_string()),
        6 => Just("\\clients\\client1\\d".to_string()),
        8 => Just("\\clients\\client1\\d\\f".to_string()),
        4 => Just("\\clients\\client1\\d\\*.*".to_string()),
        1 => Just("\\clients\\client1".to_string()),
        1 => Just("\\clients".to_string()),
        1 => Just("\\clients\\client1\\..\\x".to_string()),
        1 => Just("\\clients\\client2\\f".to_string()),
        1 => Just("\\clients\\client1\\a%00b c".to_string()),
        1 => Just("\\clients\\client1\\\\etc".to_string()),
        1 => "[ -~]{0,12}",
    ];
    let fnum = prop_oneof![
        4 => Just("1".to_string()),
        8 => Just("2".to_string()),
        1 => Just("0".to_string()),
        1 => hostile_number(),
    ];
    let num = prop_oneof![
        8 => (0u64..70_000).prop_map(|n| n.to_string()),
        1 => hostile_number(),
    ];
    let status = prop_oneof![
        16 => Just("NT_STATUS_OK"),
        2 => Just("NT_STATUS_OBJECT_NAME_NOT_FOUND"),
        1 => Just("NT_STATUS_NO_SUCH_FILE"),
        1 => Just("NT_STATUS_OBJECT_NAME_COLLISION"),
        1 => Just("0x0"),
        1 => Just("0xC0000034"),
        1 => Just("NT_STATUS_BOGUS"),
        1 => Just("OK"),
    ];
    let line = (
        0u8..24,
        path.clone(),
        path,
        fnum,
        (num.clone(), num.clone(), num),
        status,
        prop::option::of(prop_oneof![
            Just("0.5"),
            Just("1e300"),
            Just("12"),
            Just("3x")
        ]),
    )
        .prop_map(|(k, p, q, f, (a, b, c), st, time)| {
            let op = match k {
                0..=2 => format!("NTCreateX \"{p}\" 0x40 0x2 {f}"),
                3 => format!("NTCreateX \"{p}\" 0x1 0x2 {f}"),
                4 => format!("NTCreateX \"{p}\" 0x0 0x{} {f}", b.len() % 7),
                5 | 6 => format!("ReadX {f} {a} {b} {b}"),
                7 | 8 => format!("WriteX {f} {a} {b} {b}"),
                9 => format!("Close {f}"),
                10 => format!("Flush {f}"),
                11 => format!("QUERY_PATH_INFORMATION \"{p}\" 1004"),
                12 => format!("QUERY_FILE_INFORMATION {f} 258"),
                13 => "QUERY_FS_INFORMATION 259".to_string(),
                14 => format!("SET_FILE_INFORMATION {f} 1004"),
                15 => format!("FIND_FIRST \"{p}\" 260 {c} 0"),
                16 => format!("Unlink \"{p}\" 0x6"),
                17 => format!("Rename \"{p}\" \"{q}\""),
                18 => format!("LockX {f} {a} {b}"),
                19 => format!("UnlockX {f} {a} {b}"),
                20 => format!("Deltree \"{p}\""),
                21 => format!("Mkdir \"{p}\""),
                22 => format!("Rmdir \"{p}\""),
                _ => format!("Sleep {a}"),
            };
            match time {
                Some(t) => format!("{t} {op} {st}"),
                None => format!("{op} {st}"),
            }
        });
    // Most files start as a real one does: a directory and a file in it
    // made (fnums 1 and 2), so later lines have something to work on.
    (
        prop::bool::weighted(0.7),
        prop::collection::vec(line, 0..10),
    )
        .prop_map(|(start, lines)| {
            let mut t = String::new();
            if start {
                t.push_str("NTCreateX \"\\clients\\client1\\d\" 0x1 0x2 1 NT_STATUS_OK\n");
                t.push_str("NTCreateX \"\\clients\\client1\\d\\f\" 0x40 0x2 2 NT_STATUS_OK\n");
            }
            for l in lines {
                t.push_str(&l);
                t.push('\n');
            }
            t
        })
}

proptest! {
    #![proptest_config(config(1500, 0x1157_0d8e))]

    /// dbench load files: the converter never panics, names the file in
    /// every error, and whatever it accepts is a trace that parses back
    /// equal and estimates its bytes without overflow.
    #[test]
    fn dbench_load_files_never_panic_and_round_trip(text in dbench_text()) {
        let r = no_panic("dbench::convert", &text, || plumb::trace::dbench::convert("l.txt", &text))?;
        match r {
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.starts_with("l.txt:"), "dbench error without the file: {msg}");
                named("dbench::convert", &text, &e.cause.to_string())?;
            }
            Ok(c) => {
                let t = c.trace;
                let again = no_panic("Trace::to_text", &text, || t.to_text())?;
                let back = plumb::trace::Trace::parse("t.trace", &again);
                prop_assert!(back.is_ok(), "an accepted load file makes a trace that does not parse: {:?}\n{text}\n{again}", back.err());
                prop_assert_eq!(back.unwrap(), t.clone(), "the trace read back differs\n{}", text);
                no_panic("budget::bytes_needed", &text, || plumb::trace::budget::bytes_needed(&t))?;
            }
        }
    }
}

/// The load-file generator reaches load files the converter accepts, with
/// several operations, so the property above tests more than errors.
#[test]
fn dbench_generator_reaches_valid_load_files() {
    let mut runner = proptest::test_runner::TestRunner::new(config(1, 0x1157_0d8f));
    let (mut ok, mut rich) = (0, 0);
    for _ in 0..1000 {
        let t = dbench_text().new_tree(&mut runner).unwrap().current();
        if let Ok(c) = plumb::trace::dbench::convert("l.txt", &t) {
            ok += 1;
            if c.trace.steps.starts.len() >= 4 {
                rich += 1;
            }
        }
    }
    assert!(
        ok >= 50 && rich >= 10,
        "only {ok} of 1000 generated load files convert ({rich} with 4 or more operations): the property would test errors only"
    );
}

proptest! {
    #![proptest_config(config(400, 0x1157_0d90))]

    /// What the converter accepts replays as it says: the model of the
    /// client's directory behind every expected outcome agrees with the
    /// kernel, call by call (no divergence), with one client and with two.
    #[test]
    fn accepted_dbench_load_files_replay_without_divergence(text in dbench_text()) {
        let Ok(c) = plumb::trace::dbench::convert("l.txt", &text) else { return Ok(()) };
        let t = c.trace;
        let prepared = plumb::trace::replay::Prepared::of(&t, "t.trace");
        let tmp = tempfile::tempdir().unwrap();
        for clients in [1, 2] {
            let dir = plumb::sandbox::RunDir::create(tmp.path(), plumb::sandbox::Account::unbounded()).unwrap();
            let stop = std::sync::atomic::AtomicBool::new(false);
            let o = plumb::trace::ReplayOptions { speed: plumb::trace::Speed::Max, keep_threads: true, clients, maps: Default::default() };
            let bounds = plumb::trace::Bounds { stop: &stop, deadline: None, max_bytes: 1 << 40 };
            let r = no_panic("replay", &text, || plumb::trace::replay::lay_out_and_replay(&prepared, &dir, o, bounds))?;
            let r = r.map_err(|e| TestCaseError::fail(format!("replay refused: {e}\n{text}")))?;
            prop_assert_eq!(r.divergences, 0, "{:?} with {} client(s) on:\n{}\n{}", r.first_divergence, clients, text, t.to_text());
            prop_assert_eq!(r.total_ops, t.ops.len() as u64 * clients as u64);
            dir.delete().unwrap();
        }
    }
}

/// A replay result as `plumb trace replay --json` saves it.
fn valid_replay() -> serde_json::Value {
    serde_json::json!({
        "schema": "plumb.replay.v1",
        "ops": [{ "op": "fsync", "count": 3, "bytes": 0, "expected_errors": 0, "divergences": 1,
                  "mean_us": 500.5, "p50_us": 400.0, "p99_us": 900.0, "max_us": 950.0 }],
        "total_ops": 3, "divergences": 1, "expected_errors": 0, "skipped": 0,
        "first_divergence": "fsync (record 2): EIO", "halted": { "reason": "disk_full", "message": "ENOSPC" },
        "seconds": 0.5, "original_seconds": 0.4, "time_ratio": 1.25, "files_created": 1,
        "bytes_laid_out": 4096, "clients": 2, "client_seconds": [0.5, 0.4],
        "steps": [{ "step": "commit", "count": 1, "mean_us": 10.0, "p50_us": 10.0, "p99_us": 10.0, "max_us": 10.0 }]
    })
}

proptest! {
    #![proptest_config(config(400, 0x1157_0031))]

    /// A saved replay result with one field replaced by hostile JSON: `plumb
    /// show`'s reader never panics and names the file; what loads renders
    /// in every format without panic and without a raw ESC on the terminal.
    #[test]
    fn saved_replay_results_never_panic(pick in any::<prop::sample::Index>(), value in json_value(3)) {
        let mut doc = valid_replay();
        let mut ptrs = Vec::new();
        pointers(&doc, String::new(), &mut ptrs);
        let ptr = pick.get(&ptrs).clone();
        if ptr.is_empty() { doc = value.clone(); } else if let Some(slot) = doc.pointer_mut(&ptr) { *slot = value.clone(); }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
        let input = format!("{ptr} = {value}");
        match no_panic("compare::load::load_saved", &input, || plumb::compare::load::load_saved(&path))? {
            Err(e) => prop_assert!(e.to_string().contains("r.json"), "load error does not name the file: {e}"),
            Ok(plumb::compare::load::Saved::Replay(r)) => {
                for f in [plumb::report::run_table::Format::Table, plumb::report::run_table::Format::Markdown, plumb::report::run_table::Format::Csv, plumb::report::run_table::Format::Json] {
                    let out = no_panic("report::replay::render", &input, || plumb::report::replay::render(&r, f))?;
                    if f == plumb::report::run_table::Format::Table {
                        prop_assert!(!out.contains('\u{1b}') && !out.contains('\u{9b}'), "raw ESC/CSI in the table for {input}");
                    }
                }
            }
            // The schema replaced by a result's: read as a result document.
            Ok(plumb::compare::load::Saved::Run(_)) => {}
        }
    }
}

/// A valid document with a job (its timeline, case and repeat), phases
/// and a series: what the charts and the report page draw.
fn charted_doc(label: &str) -> serde_json::Value {
    let mut doc = valid_doc(label, &[1.0, 2.0]);
    let mut job = serde_json::to_value(plumb::model::result::JobResult {
        name: "j".into(),
        rw: "randread".into(),
        started_s: Some(0.5),
        ended_s: Some(2.7),
        case: Some("c".into()),
        repeat: Some(1),
        ..Default::default()
    })
    .unwrap();
    job["read"]["total_ios"] = 300.into();
    job["read"]["lat"]["samples"] = 300.into();
    job["read"]["lat"]["p50"] = 60_000.into();
    job["read"]["lat"]["p99"] = 250_000.into();
    job["timeline"] = serde_json::json!([
        {"t_ms": 0, "duration_ms": 1000, "read_ios": 100, "read_bytes": 409600, "write_ios": 0, "write_bytes": 0},
        {"t_ms": 1000, "duration_ms": 1000, "read_ios": 100, "read_bytes": 409600, "write_ios": 0, "write_bytes": 0},
        {"t_ms": 2000, "duration_ms": 200, "partial": true, "read_ios": 20, "read_bytes": 81920, "write_ios": 0, "write_bytes": 0}
    ]);
    let s = &mut doc["scenarios"][0];
    s["jobs"] = serde_json::json!([job.clone(), job]);
    s["phases"] = serde_json::json!([{"name": "c", "started_s": 0.0, "ended_s": 2.0, "repeat": 1}, {"name": "d", "started_s": 2.0}]);
    s["series"] = serde_json::json!([{"name": "x", "unit": "µs", "points": [[0.0, 1.0], [1.0, 2.0]]}, {"name": "y", "unit": "MiB/s", "points": [[0.5, 3.0]]}]);
    s["notes"] = serde_json::json!(["n"]);
    s["tables"] = serde_json::json!([{"title": "t", "header": ["a"], "rows": [["1"]]}]);
    doc
}

proptest! {
    #![proptest_config(config(200, 0x1157_0031))]

    /// A charted document with one field replaced by hostile JSON: what
    /// loads is charted and laid out as a page without panic, the page
    /// holds one script (its own) and no raw ESC, every chart is XML.
    #[test]
    fn charts_and_report_pages_never_panic(pick in any::<prop::sample::Index>(), value in json_value(3)) {
        let mut doc = charted_doc("a");
        let mut ptrs = Vec::new();
        pointers(&doc, String::new(), &mut ptrs);
        let ptr = pick.get(&ptrs).clone();
        if ptr.is_empty() { doc = value.clone(); } else if let Some(slot) = doc.pointer_mut(&ptr) { *slot = value.clone(); }
        let dir = tempfile::tempdir().unwrap();
        let pa = dir.path().join("a.json");
        std::fs::write(&pa, serde_json::to_string(&doc).unwrap()).unwrap();
        let pb = dir.path().join("b.json");
        std::fs::write(&pb, serde_json::to_string(&charted_doc("b")).unwrap()).unwrap();
        let input = format!("{ptr} = {value}");
        let Ok(da) = no_panic("compare::load::load", &input, || plumb::compare::load::load(&pa))? else {
            return Ok(());
        };
        let db = plumb::compare::load::load(&pb).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for docs in [vec![da.clone()], vec![da, db]] {
            let c = plumb::compare::compare(&docs).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let charts = no_panic("charts::all", &input, || plumb::report::charts::all(&docs, &c))?;
            let Ok(charts) = charts else { continue };
            for chart in &charts {
                prop_assert!(roxmltree::Document::parse(&chart.svg).is_ok(), "{} is not XML for {input}", chart.file);
            }
            let files: Vec<String> = vec!["a.json".into(), "b.json".into()];
            let page = plumb::report::page::Page { docs: &docs, files: &files, c: &c, layouts: &[], charts: &charts };
            let html = no_panic("page::html", &input, || plumb::report::page::html(&page))?;
            prop_assert_eq!(html.matches("<script").count(), 1, "for {}", input);
            prop_assert!(!html.contains('\u{1b}') && !html.contains('\u{9b}'), "raw ESC/CSI in the page for {input}");
            no_panic("page::markdown", &input, || plumb::report::page::markdown(&page, "c"))?;
        }
    }
}

// ---------------------------------------------------------------- the cost of reading results

/// A run number (`repeat`) as a stranger's file gives it: none, small, at
/// the limit, past it, the largest u32.
fn run_number() -> impl Strategy<Value = Option<u64>> {
    let limit = u64::from(plumb::model::document::limits::REPEAT);
    prop_oneof![
        Just(None),
        (0u64..=3).prop_map(Some),
        Just(Some(limit)),
        Just(Some(limit + 1)),
        Just(Some(u64::from(u32::MAX))),
        (0u64..=2 * limit).prop_map(Some),
    ]
}

/// A job of `doc`'s shape named `name`, from `start` to `end` on the
/// scenario's clock, in run `repeat`.
fn timed_job(name: &str, (start, end): (f64, f64), repeat: Option<u64>) -> serde_json::Value {
    let mut job = serde_json::to_value(plumb::model::result::JobResult {
        name: name.into(),
        rw: "randread".into(),
        started_s: Some(start),
        ended_s: Some(end),
        ..Default::default()
    })
    .unwrap();
    job["read"]["total_ios"] = 10.into();
    job["timeline"] = serde_json::json!([{"t_ms": 0, "duration_ms": 1000, "read_ios": 10, "read_bytes": 40960, "write_ios": 0, "write_bytes": 0}]);
    if let Some(r) = repeat {
        job["repeat"] = r.into();
    }
    job
}

proptest! {
    #![proptest_config(config(96, 0x1157_0046))]

    /// Run numbers anywhere a document holds one (the scenario's `repeat`,
    /// a job's, a series', a phase's): past the limit the file is refused
    /// naming it and the place; within it the charts are those of the runs
    /// held (one series chart per run a series names), whatever the count
    /// the scenario claims.
    #[test]
    fn run_numbers_are_bounded_and_charts_follow_the_runs_held(
        claimed in run_number(),
        series in prop::collection::vec(run_number(), 0..5),
        jobs in prop::collection::vec(run_number(), 0..5),
        phases in prop::collection::vec(run_number(), 0..3),
    ) {
        let limit = u64::from(plumb::model::document::limits::REPEAT);
        let mut doc = valid_doc("a", &[1.0]);
        let s = &mut doc["scenarios"][0];
        s["repeat"] = claimed.unwrap_or(1).into();
        let with_run = |mut v: serde_json::Value, r: Option<u64>| {
            if let Some(r) = r {
                v["repeat"] = r.into();
            }
            v
        };
        s["series"] = series.iter().map(|r| with_run(serde_json::json!({"name": "x", "unit": "u", "points": [[0.0, 1.0]]}), *r)).collect();
        s["jobs"] = jobs.iter().enumerate().map(|(i, r)| timed_job(&format!("j{i}"), (0.0, 1.0), *r)).collect();
        s["phases"] = phases.iter().map(|r| with_run(serde_json::json!({"name": "p", "started_s": 0.0}), *r)).collect();
        let path = write_doc(&doc);
        let input = format!("repeat {claimed:?}, series {series:?}, jobs {jobs:?}, phases {phases:?}");
        let past = [claimed].iter().chain(&series).chain(&jobs).chain(&phases).flatten().any(|r| *r > limit);
        let loaded = no_panic("compare::load::load", &input, || plumb::compare::load::load(&path))?;
        match loaded {
            Err(e) => {
                let e = e.to_string();
                prop_assert!(past, "refused within the limit: {e} for {input}");
                prop_assert!(e.contains(&path.display().to_string()) && e.contains("repeat") && e.contains("scenarios[0]"), "{e}");
            }
            Ok(d) => {
                prop_assert!(!past, "a run number past {limit} was read: {input}");
                let docs = vec![d];
                let c = plumb::compare::compare(&docs).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let charts = no_panic("charts::all", &input, || plumb::report::charts::all(&docs, &c))?
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let held: std::collections::BTreeSet<u64> = series.iter().map(|r| r.unwrap_or(1)).filter(|r| *r > 0).collect();
                let drawn = charts.iter().filter(|c| c.kind == plumb::report::charts::Kind::Series).count();
                prop_assert_eq!(drawn, held.len(), "series charts for {}", input);
                let names: std::collections::HashSet<&str> = charts.iter().map(|c| c.file.as_str()).collect();
                prop_assert_eq!(names.len(), charts.len(), "two charts of one file name for {}", input);
            }
        }
    }

    /// Jobs of one scenario at any times, in any runs, under few names:
    /// what each ran beside is what a check of every pair finds (the count),
    /// with at most three named, each a job that did overlap it; each job
    /// is an instance of its own with its two charts.
    #[test]
    fn what_a_job_ran_beside_is_every_overlapping_job_of_its_run(
        spans in prop::collection::vec((0u32..30, 0u32..30, 0u8..4, prop::option::of(1u64..3)), 1..60),
    ) {
        let mut doc = valid_doc("a", &[1.0]);
        doc["scenarios"][0]["jobs"] = spans.iter().map(|(a, b, n, r)| timed_job(&format!("j{n}"), (f64::from(*a) * 0.5, f64::from(*b) * 0.5), *r)).collect();
        let input = format!("{spans:?}");
        let d = plumb::compare::load::load(&write_doc(&doc)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let jobs = &d.scenarios[0].jobs;
        let overlaps = plumb::report::charts::overlap::Overlaps::new(jobs);
        let span = |j: &plumb::model::result::JobResult| (j.started_s.unwrap(), j.ended_s.unwrap());
        for (i, j) in jobs.iter().enumerate() {
            let (a0, a1) = span(j);
            let beside: Vec<&plumb::model::result::JobResult> = jobs.iter().enumerate()
                .filter(|(o, x)| *o != i && a0 < a1 && x.repeat == j.repeat)
                .map(|(_, x)| x)
                .filter(|x| { let (b0, b1) = span(x); b0 < b1 && b0 < a1 && a0 < b1 })
                .collect();
            match overlaps.beside(i) {
                None => prop_assert!(beside.is_empty(), "job {i}: none found, {} overlap, for {input}", beside.len()),
                Some(b) => {
                    prop_assert_eq!(b.count, beside.len(), "job {} for {}", i, input);
                    prop_assert!(!b.names.is_empty() && b.names.len() <= plumb::report::charts::overlap::NAMED);
                    for n in &b.names {
                        prop_assert!(beside.iter().any(|x| &x.name == n), "{n} did not run beside job {i}: {input}");
                    }
                }
            }
        }
        let docs = vec![d];
        let c = plumb::compare::compare(&docs).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let charts = plumb::report::charts::all(&docs, &c).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let latency = charts.iter().filter(|c| c.kind == plumb::report::charts::Kind::Latency).count();
        prop_assert_eq!(latency, spans.len(), "a latency chart per job for {}", input);
    }

    /// Scenarios under names that share a long prefix, with duplicates and
    /// packs among few, and parameters that differ between two runs: the
    /// comparison has a row per distinct (scenario, metric), each
    /// not-comparable reason names at most three parameters and stays
    /// short, chart file names are unique, and the page has a section per
    /// scenario that has charts.
    #[test]
    fn many_scenarios_keep_their_rows_reasons_charts_and_sections(
        names in prop::collection::vec((0u8..12, prop::option::of(0u8..3)), 1..40),
        params in prop::collection::vec((0u8..20, 0usize..300), 0..12),
    ) {
        let prefix = "x".repeat(300);
        let make = |label: &str, tag: &str| {
            let mut doc = valid_doc(label, &[1.0]);
            let proto = doc["scenarios"][0].clone();
            doc["scenarios"] = names.iter().map(|(n, p)| {
                let mut s = proto.clone();
                s["name"] = format!("{prefix}{n}").into();
                s["pack"] = p.map(|p| format!("{prefix}p{p}")).into();
                s["params"] = params.iter().map(|(k, len)| (format!("k{k}"), serde_json::Value::from(tag.repeat(*len)))).collect::<serde_json::Map<_, _>>().into();
                s["series"] = serde_json::json!([{"name": "x", "unit": "u", "points": [[0.0, 1.0]]}]);
                s
            }).collect();
            doc
        };
        let input = format!("{names:?} {params:?}");
        let docs = vec![
            plumb::compare::load::load(&write_doc(&make("a", "A"))).map_err(|e| TestCaseError::fail(e.to_string()))?,
            plumb::compare::load::load(&write_doc(&make("b", "B"))).map_err(|e| TestCaseError::fail(e.to_string()))?,
        ];
        let c = no_panic("compare::compare", &input, || plumb::compare::compare(&docs))?.map_err(|e| TestCaseError::fail(e.to_string()))?;
        let distinct: std::collections::HashSet<String> = docs[0].scenarios.iter().map(|s| s.qualified_name()).collect();
        prop_assert_eq!(c.rows.len(), distinct.len(), "rows for {}", input);
        // A name given twice keeps its last value.
        let last: std::collections::BTreeMap<u8, usize> = params.iter().copied().collect();
        let differ = last.values().filter(|len| **len > 0).count();
        for cell in c.rows.iter().map(|r| &r.cells[1]) {
            match &cell.not_comparable {
                None => prop_assert_eq!(differ, 0, "comparable though {} parameters differ: {}", differ, input),
                Some(why) => {
                    prop_assert!(differ > 0, "not comparable ({why}) for {input}");
                    prop_assert!(why.len() <= 600, "a reason of {} bytes for {input}", why.len());
                    prop_assert_eq!(why.matches(" vs ").count(), differ.min(plumb::compare::NAMED_PARAMS), "{} for {}", why, input);
                    if differ > plumb::compare::NAMED_PARAMS {
                        let more = format!("and {} more", differ - plumb::compare::NAMED_PARAMS);
                        prop_assert!(why.ends_with(&more), "{why}");
                    }
                }
            }
        }
        let charts = no_panic("charts::all", &input, || plumb::report::charts::all(&docs, &c))?.map_err(|e| TestCaseError::fail(e.to_string()))?;
        let files: std::collections::HashSet<&str> = charts.iter().map(|c| c.file.as_str()).collect();
        prop_assert_eq!(files.len(), charts.len(), "two charts of one file name for {}", input);
        let shown: std::collections::HashSet<String> = docs[0].scenarios.iter().map(plumb::report::run_table::shown_name).collect();
        let page = plumb::report::page::Page { docs: &docs, files: &["a.json".into(), "b.json".into()], c: &c, layouts: &[], charts: &charts };
        let html = no_panic("page::html", &input, || plumb::report::page::html(&page))?;
        prop_assert_eq!(html.matches("class=\"scenario\"").count(), shown.len(), "sections for {}", input);
    }
}

// ---------------------------------------------------------------- live metrics (--metrics-listen)

proptest! {
    #![proptest_config(config(2000, 0x1157_0040))]

    /// `--metrics-listen` values: no panic, an error naming the value.
    #[test]
    fn metrics_listen_addresses_parse_without_panic(text in prop_oneof![hostile_number(), "[0-9a-z:.\\[\\]]{0,24}", ".{0,24}"]) {
        let r = no_panic("metrics::listen_address", &text, || plumb::metrics::listen_address(&text))?;
        if let Err(e) = r { named("metrics::listen_address", &text, &e.to_string())?; }
    }

    /// Any text as job, pack, scenario and run labels: every series stays
    /// one line of the exposition (no label value forges a line), and the
    /// OpenMetrics text ends with its one `# EOF`.
    #[test]
    fn any_labels_stay_inside_their_series(label in ".{0,40}", pack in ".{0,20}", scenario in ".{0,20}", jobs in prop::collection::vec(".{0,30}", 1..4)) {
        use plumb::metrics::exposition::{encode, Format};
        let input = format!("{label:?} {pack:?} {scenario:?} {jobs:?}");
        let board = plumb::metrics::Board::new(&label, "h", plumb::metrics::Steps::Scenarios);
        let scope = board.scope(&pack, &scenario);
        let names: Vec<&str> = jobs.iter().map(String::as_str).collect();
        let tap = scope.tap(&names);
        tap.update(&vec![plumb::metrics::JobFigures::default(); names.len()]);
        let series = board.snapshot().jobs.len();
        for format in [Format::OpenMetrics, Format::Prometheus] {
            let text = no_panic("metrics::exposition::encode", &input, || encode(board.snapshot(), format))?;
            let ops = text.lines().filter(|l| l.starts_with("plumb_io_operations_total{")).count();
            prop_assert_eq!(ops, 2 * series, "{:?}: {}", format, text);
            prop_assert!(text.lines().all(|l| l.starts_with('#') || l.starts_with("plumb_")), "{format:?}: a forged line in {text}");
            if format == Format::OpenMetrics {
                prop_assert!(text.ends_with("# EOF\n") && text.matches("# EOF").count() == 1, "{text}");
            }
        }
        drop(tap);
    }

    /// Names and values of a scenario's own series: what is accepted is a
    /// plain exposition name and a finite value.
    #[test]
    fn script_series_accept_only_plain_names_and_finite_values(name in prop_oneof!["[a-z][a-z0-9_]{0,70}", ".{0,20}"], value in prop_oneof![any::<f64>(), Just(f64::NAN), Just(-0.0)]) {
        use plumb::metrics::board::check_script_series;
        use plumb::metrics::ScriptKind;
        for kind in [ScriptKind::Counter, ScriptKind::Gauge] {
            let r = no_panic("check_script_series", &name, || check_script_series(&name, value, kind))?;
            if r.is_ok() {
                prop_assert!(name.len() <= 64 && name.starts_with(|c: char| c.is_ascii_lowercase()), "{name}");
                prop_assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{name}");
                prop_assert!(!name.ends_with("_total") && value.is_finite(), "{name} {value}");
                prop_assert!(kind == ScriptKind::Gauge || value >= 0.0, "{name} {value}");
            }
        }
    }
}

/// One endpoint for the request properties below, serving an empty board.
fn metrics_endpoint() -> std::net::SocketAddr {
    static ADDR: std::sync::OnceLock<std::net::SocketAddr> = std::sync::OnceLock::new();
    *ADDR.get_or_init(|| {
        let board = plumb::metrics::Board::new("props", "h", plumb::metrics::Steps::Jobs);
        let e = plumb::metrics::Endpoint::start(
            "127.0.0.1:0".parse().unwrap(),
            board,
            plumb::metrics::Limits::default(),
        )
        .unwrap();
        let addr = e.local_addr();
        // Kept for the test process's life.
        std::mem::forget(e);
        addr
    })
}

/// Request heads: a method, a path, a version and headers, each often
/// hostile.
fn request_head() -> impl Strategy<Value = Vec<u8>> {
    let method = prop_oneof![
        Just("GET".to_string()),
        Just("POST".to_string()),
        Just("HEAD".to_string()),
        "[A-Za-z]{0,8}",
        ".{0,6}"
    ];
    let path = prop_oneof![
        Just("/metrics".to_string()),
        Just("/metrics?x=1".to_string()),
        Just("/".to_string()),
        "/[ -~]{0,20}",
        ".{0,12}"
    ];
    let version = prop_oneof![
        Just("HTTP/1.1".to_string()),
        Just("HTTP/1.0".to_string()),
        Just("HTTP/2.0".to_string()),
        ".{0,10}"
    ];
    let headers = prop::collection::vec(("[A-Za-z-]{0,12}", "[ -~]{0,40}"), 0..40);
    let raw = prop::collection::vec(any::<u8>(), 0..300);
    prop_oneof![
        4 => (method, path, version, headers).prop_map(|(m, p, v, h)| {
            let mut s = format!("{m} {p} {v}\r\n");
            for (k, val) in h { s.push_str(&format!("{k}: {val}\r\n")); }
            s.push_str("\r\n");
            s.into_bytes()
        }),
        1 => raw,
    ]
}

proptest! {
    #![proptest_config(config(300, 0x1157_0041))]

    /// Whatever a peer sends (then closes its side), the endpoint answers
    /// with one of its statuses or closes, at once; `GET /metrics` with a
    /// well-formed head is answered 200.
    #[test]
    fn the_endpoint_answers_any_request_with_a_known_status(head in request_head()) {
        use std::io::{Read, Write};
        let addr = metrics_endpoint();
        let input = String::from_utf8_lossy(&head).into_owned();
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let _ = s.write_all(&head);
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut answer = Vec::new();
        let started = std::time::Instant::now();
        let _ = s.read_to_end(&mut answer);
        prop_assert!(started.elapsed() < std::time::Duration::from_secs(3), "{input:?} took {:?}", started.elapsed());
        let answer = String::from_utf8_lossy(&answer);
        let status = answer.lines().next().unwrap_or("");
        prop_assert!(
            answer.is_empty() || ["200", "400", "404", "405", "431"].iter().any(|c| status.starts_with(&format!("HTTP/1.1 {c} "))),
            "{input:?} got {status:?}"
        );
        if input.starts_with("GET /metrics HTTP/1.1\r\n") && input.ends_with("\r\n\r\n") && !status.is_empty() && !status.contains(" 431 ") && !status.contains(" 400 ") {
            prop_assert!(status.contains(" 200 "), "{input:?} got {status:?}");
        }
    }
}

// ---------------------------------------------------------------- Markdown text (issue 46, item 7)

/// What a stranger may name a scenario, metric, host or table cell: remote
/// images and links, raw HTML, headings after a newline, block starts,
/// entities, Markdown's punctuation, any text.
fn markdown_name() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("![x](http://evil.test/p.png)".to_string()),
        Just("[l](http://evil.test/)".to_string()),
        Just("[r]: http://evil.test/".to_string()),
        Just("<img src=http://evil.test/i.png>".to_string()),
        Just("<http://evil.test/a>".to_string()),
        Just("www.evil.test me@evil.test".to_string()),
        Just("\n# h\n".to_string()),
        Just("\n===\n".to_string()),
        Just("\n---\n".to_string()),
        Just("\n    code".to_string()),
        Just("1. ".to_string()),
        Just("- ".to_string()),
        Just("> ".to_string()),
        Just("```".to_string()),
        Just("$x$ ^s^ ~~d~~ **b** _e_".to_string()),
        Just("&lt;&#x5B;&amp;".to_string()),
        Just("[^1]".to_string()),
        "[!-/:-@\\[-`{-~]{1,6}",
        "[ -~]{0,8}",
        ".{0,4}",
    ];
    prop::collection::vec(piece, 0..6).prop_map(|v| v.concat())
}

/// How the tests read Markdown: as GitHub does (tables, strikethrough,
/// task lists, footnotes, math), without smart punctuation, which would
/// change the text.
fn gfm() -> pulldown_cmark::Options {
    use pulldown_cmark::Options;
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_MATH
        | Options::ENABLE_GFM
        | Options::ENABLE_SUPERSCRIPT
        | Options::ENABLE_SUBSCRIPT
}

/// The links, images, HTML and headings of Markdown `text` (an image's
/// destination, a heading's text), in order.
fn markdown_active(text: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut out = Vec::new();
    let mut heading: Option<String> = None;
    for e in Parser::new_ext(text, gfm()) {
        match e {
            Event::Start(Tag::Link { dest_url, .. }) => out.push(format!("link {dest_url}")),
            Event::Start(Tag::Image { dest_url, .. }) => out.push(format!("image {dest_url}")),
            Event::Html(h) | Event::InlineHtml(h) => out.push(format!("html {h}")),
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                out.push(format!("heading {}", heading.take().unwrap_or_default()))
            }
            _ => {}
        }
    }
    out
}

proptest! {
    #![proptest_config(config(3000, 0x1157_0046))]

    /// Any name as Markdown text reads back as written (cleaned of
    /// controls), inside a line: one paragraph of plain text, nothing
    /// else; alone on a line it starts no block (heading, list, quote,
    /// rule, table, fence) and nothing in it is a link, an image, HTML,
    /// emphasis, code or math.
    #[test]
    fn markdown_text_is_inert_and_reads_as_written(name in markdown_name()) {
        use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};
        let md = no_panic("markdown::text", &name, || plumb::report::markdown::text(&name))?;
        let cleaned = plumb::terminal::cleaned(&name);
        let inline = format!("a{md}a");
        let mut text = String::new();
        for e in Parser::new_ext(&inline, gfm()) {
            match e {
                Event::Text(t) => text.push_str(&t),
                Event::Start(Tag::Paragraph) | Event::End(_) => {}
                other => prop_assert!(false, "{other:?} in {inline:?} (from {name:?})"),
            }
        }
        prop_assert_eq!(text, format!("a{cleaned}a"), "{:?} does not read as written", md);
        for e in Parser::new_ext(&md, gfm()) {
            let plain = matches!(e, Event::Text(_) | Event::Start(Tag::Paragraph) | Event::End(_)
                | Event::Start(Tag::CodeBlock(CodeBlockKind::Indented)));
            prop_assert!(plain, "{e:?} in {md:?} (from {name:?})");
        }
    }
}

proptest! {
    #![proptest_config(config(150, 0x1157_0047))]

    /// A result whose every name is a stranger's text, as `show --format
    /// markdown`, `compare --format markdown` and `report -o FILE.md` write
    /// it: no link, no HTML, no image but the page's own charts, and no
    /// heading but those the writer makes (one per table, the page's own).
    #[test]
    fn markdown_outputs_carry_nothing_active_from_names(names in prop::collection::vec(markdown_name(), 12)) {
        use plumb::report::run_table::Format;
        let n = |i: usize| names[i].clone();
        let mut doc = valid_doc(&n(0), &[1.0, 2.0, 3.0]);
        doc["host"]["hostname"] = n(1).into();
        doc["host"]["cpu_model"] = n(2).into();
        let s = &mut doc["scenarios"][0];
        s["name"] = n(3).into();
        s["pack"] = n(4).into();
        s["params"] = serde_json::json!({ n(5): n(6) });
        s["metrics"][0]["name"] = n(7).into();
        s["metrics"][0]["unit"] = n(8).into();
        s["notes"] = serde_json::json!([n(9)]);
        s["error"] = n(10).into();
        s["tables"] = serde_json::json!([{ "title": n(11), "header": [n(0), n(3)], "rows": [[n(7), n(9)], [n(1)]] }]);
        let mut other = doc.clone();
        other["label"] = "b".into();
        let input = format!("{names:?}");
        let dir = tempfile::tempdir().unwrap();
        let load = |name: &str, d: &serde_json::Value| {
            let path = dir.path().join(name);
            std::fs::write(&path, serde_json::to_string(d).unwrap()).unwrap();
            plumb::compare::load::load(&path).map_err(|e| TestCaseError::fail(format!("{e} for {input}")))
        };
        let a = load("a.json", &doc)?;
        let b = load("b.json", &other)?;
        let shown = no_panic("results::run", &input, || plumb::report::results::run(&a, &[], Format::Markdown))?;
        let only_tables = |md: &str| -> Vec<String> {
            markdown_active(md).into_iter().filter(|x| !x.starts_with("heading ")).collect()
        };
        prop_assert_eq!(only_tables(&shown), Vec::<String>::new(), "show: {}", shown);
        prop_assert_eq!(markdown_active(&shown).len(), 1, "show makes one heading (its table's): {}", shown);
        let docs = vec![a, b];
        let c = plumb::compare::compare(&docs).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let compared = no_panic("comparison::render", &input, || plumb::report::comparison::render(&c, &docs, Format::Markdown))?;
        prop_assert_eq!(markdown_active(&compared), Vec::<String>::new(), "compare: {}", compared);
        for docs in [&docs[..1], &docs[..]] {
            let c = plumb::compare::compare(docs).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let charts = plumb::report::charts::all(docs, &c).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let files: Vec<String> = vec![n(5), n(6)];
            let page = plumb::report::page::Page { docs, files: &files, c: &c, layouts: &[], charts: &charts };
            let md = no_panic("page::markdown", &input, || plumb::report::page::markdown(&page, "r-charts"))?;
            let mut headings = 0;
            for x in markdown_active(&md) {
                if x.starts_with("heading ") {
                    headings += 1;
                } else {
                    prop_assert!(x.starts_with("image r-charts/") && !x.contains(':'), "{} in the page: {}", x, md);
                }
            }
            // The title, Runs, What was measured, Results, Charts; a heading
            // per scenario table of each run, and per chart.
            let expected = 5 + docs.len() + charts.len();
            prop_assert_eq!(headings, expected, "the page's headings: {}", md);
        }
    }
}
