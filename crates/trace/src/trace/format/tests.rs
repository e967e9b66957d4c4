use super::*;

fn sample() -> Trace {
    Trace {
        files: vec![
            FileEntry::file("db/app db.sqlite", Some(8192)),
            FileEntry {
                path: "db".into(),
                size: Some(0),
                kind: EntryKind::Dir,
                target: None,
            },
            FileEntry {
                path: "db/cur".into(),
                size: Some(0),
                kind: EntryKind::Symlink,
                target: Some("app db.sqlite".into()),
            },
        ],
        threads: vec![100, 101],
        ops: vec![
            Op {
                thread: 0,
                start_us: 0,
                dur_us: 5,
                failed: None,
                kind: OpKind::Open {
                    handle: 0,
                    file: 0,
                    flags: OpenFlags {
                        read: true,
                        write: true,
                        direct: true,
                        ..Default::default()
                    },
                },
            },
            Op {
                thread: 0,
                start_us: 10,
                dur_us: 3,
                failed: None,
                kind: OpKind::Read {
                    call: "pread",
                    handle: 0,
                    offset: 4096,
                    len: 4096,
                },
            },
            Op {
                thread: 1,
                start_us: 12,
                dur_us: 3,
                failed: None,
                kind: OpKind::Write {
                    call: "write",
                    handle: 0,
                    offset: 0,
                    len: 100,
                },
            },
            Op {
                thread: 0,
                start_us: 20,
                dur_us: 300,
                failed: None,
                kind: OpKind::Fsync { handle: 0 },
            },
            Op {
                thread: 1,
                start_us: 300,
                dur_us: 4,
                failed: Some(libc::ENOENT),
                kind: OpKind::Stat { file: 1 },
            },
            Op {
                thread: 0,
                start_us: 400,
                dur_us: 2,
                failed: None,
                kind: OpKind::Close { handle: 0 },
            },
            Op {
                thread: 1,
                start_us: 410,
                dur_us: 9,
                failed: None,
                kind: OpKind::Rename {
                    from: 0,
                    to: 1,
                    mode: RenameMode::NoReplace,
                },
            },
        ],
        duration_us: 500,
        tracer: Some(Tracer {
            name: "strace".into(),
            wall_us: 900,
            calls: 40,
        }),
        steps: Steps::default(),
    }
}

#[test]
fn text_round_trips() {
    let t = sample();
    let text = t.to_text();
    assert!(text.contains("file 0 f 8192 db/app%20db.sqlite"));
    assert!(text.contains("file 2 l 0 db/cur app%20db.sqlite"), "{text}");
    assert!(text.contains("stat 1 =ENOENT"), "{text}");
    assert_eq!(Trace::parse("t", &text).unwrap(), t);
}

#[test]
fn errors_name_the_record() {
    let text = sample().to_text();
    let cut: String = text.lines().take(7).map(|l| format!("{l}\n")).collect();
    let e = Trace::parse("app.trace", &cut).unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
    let bad = text.replace("op 0 10 3 pread 0 4096 4096", "op 0 10 3 pread 7 4096 4096");
    let e = Trace::parse("app.trace", &bad).unwrap_err();
    assert_eq!(e.line, 10, "{e}");
    assert!(
        e.cause.to_string().contains("handle 7 is used before it is opened"),
        "{e}"
    );
    let bad = text.replace("op 0 20 300 fsync 0", "op 0 20 300 fsync");
    let e = Trace::parse("app.trace", &bad).unwrap_err();
    assert!(e.to_string().starts_with("app.trace:12: "), "{e}");
    assert!(Trace::parse("x", "hello\n")
        .unwrap_err()
        .cause.to_string()
        .contains("not a plumb trace"));
}

#[test]
fn hostile_numbers_and_lines_are_refused_by_record() {
    let head =
        "plumb-trace 2\nduration_us 10\nfile 0 f - a\nthread 0 1\nop 0 0 1 open 0 0 rw,creat\n";
    let cases = [
        ("op 0 1 1 pwrite 0 1125899906842624 1\n", "largest file"),
        (
            "op 0 1 1 pwrite 0 0 1099511627776\n",
            "one operation may move",
        ),
        ("op 0 1 1 pwrite 0 -1 1\n", "not a number"),
        (
            "op 0 18446744073709551615 1 fsync 0\n",
            "latest a trace may name",
        ),
        ("op 0 1 1 open 4294967296 0 r\n", "not below"),
        ("op 0 1 1 open 0 0 r\n", "opened a second time"),
        ("op 0 1 1 close 4294967296\n", "used before it is opened"),
        ("op 0 1 1 stat 0 =ENOPE\n", "not an error number"),
        ("op 0 1 1 symlink 0\n", "without a target"),
        ("op 0 1 1 chmod 0 99999\n", "not a mode"),
        ("op 0 1 1 dup 0 0\n", "opened a second time"),
        ("op 0 1 1 readdir 7 10\n", "used before it is opened"),
        (
            "op 0 1 1 rename 0 0 sideways\n",
            "not noreplace or exchange",
        ),
    ];
    for (op, what) in cases {
        let e = Trace::parse("h.trace", &format!("{head}{op}end 2\n")).unwrap_err();
        assert_eq!(e.line, 6, "{e}");
        assert!(e.cause.to_string().contains(what), "{op}: {e}");
    }
    let long = format!("{head}# {}\nend 1\n", "x".repeat(1 << 20));
    assert!(Trace::parse("h", &long)
        .unwrap_err()
        .cause.to_string()
        .contains("at most"));
    let mut threads = String::from("plumb-trace 1\n");
    for i in 0..=crate::trace::limits::MAX_THREADS {
        threads.push_str(&format!("thread {i} {i}\n"));
    }
    let e = Trace::parse("h", &threads).unwrap_err();
    assert!(e.cause.to_string().contains("threads"), "{e}");
}

#[test]
fn version_1_traces_load_and_may_not_use_version_2_records() {
    let v1 = "plumb-trace 1\nduration_us 10\nfile 0 4096 a\nthread 0 1\nop 0 0 1 open 0 0 r\nop 0 1 1 pread 0 0 4096\nend 2\n";
    let t = Trace::parse("v1", v1).unwrap();
    assert_eq!(t.files[0], FileEntry::file("a", Some(4096)));
    assert_eq!(Trace::parse("v2", &t.to_text()).unwrap(), t);
    let e = Trace::parse("v1", &v1.replace("pread 0 0 4096", "readdir 0 4096")).unwrap_err();
    assert!(e.cause.to_string().contains("version 2"), "{e}");
}

#[test]
fn version_3_holds_locks_and_steps_and_is_written_only_when_needed() {
    let v3 = "plumb-trace 3\nduration_us 10\nfile 0 d 0 .\nfile 1 f - a\nthread 0 1\n\
              op 0 0 0 stat 1 =ENOENT @NTCreateX\nop 0 0 0 open 0 1 rw,creat\nop 0 0 0 fstat 0\n\
              op 0 1 0 lock 0 2147483538 1 w @LockX\nop 0 2 0 unlock 0 0 0 @UnlockX\n\
              op 0 3 0 lock 0 10 5 r @LockX\nend 6\n";
    let t = Trace::parse("v3", v3).unwrap();
    assert_eq!(t.steps.names, ["NTCreateX", "LockX", "UnlockX"]);
    assert_eq!(t.steps.starts, [(0, 0), (3, 1), (4, 2), (5, 1)]);
    assert_eq!(t.steps.begun_by(3), Some(1));
    assert_eq!(t.steps.begun_by(1), None);
    assert_eq!(
        t.ops[3].kind,
        OpKind::Lock {
            handle: 0,
            offset: 2147483538,
            len: 1,
            write: true
        }
    );
    assert_eq!(t.to_text(), v3);
    assert_eq!(Trace::parse("again", &t.to_text()).unwrap(), t);
    // Without locks or steps, version 2 as before.
    assert!(sample().to_text().starts_with("plumb-trace 2\n"));
    // Version 2 may not use them.
    let v2 = v3.replace("plumb-trace 3", "plumb-trace 2");
    let e = Trace::parse("v2", &v2).unwrap_err();
    assert!(e.cause.to_string().contains("version 3"), "{e}");
    let no_steps = "plumb-trace 2\nfile 0 f - a\nthread 0 1\nop 0 0 0 open 0 0 rw,creat\nop 0 1 0 lock 0 0 1 w\nend 2\n";
    let e = Trace::parse("v2", no_steps).unwrap_err();
    assert!(
        e.cause.to_string()
            .contains("'lock' is an operation of trace version 3"),
        "{e}"
    );
    for (bad, what) in [
        ("op 0 1 0 lock 0 0 1 x", "not r or w"),
        ("op 0 1 0 lock 0 0 1", "without its kind"),
        ("op 0 1 0 unlock 0 18446744073709551615 1", "overflows"),
        ("op 0 1 0 fstat 0 @", "step name"),
        ("op 0 1 0 fstat 0 @a/b", "step name"),
        ("op 0 1 0 lock 7 0 1 w", "used before it is opened"),
    ] {
        let text = format!(
            "plumb-trace 3\nfile 0 f - a\nthread 0 1\nop 0 0 0 open 0 0 rw,creat\n{bad}\nend 2\n"
        );
        let e = Trace::parse("b", &text).unwrap_err();
        assert_eq!(e.line, 5, "{bad}: {e}");
        assert!(e.cause.to_string().contains(what), "{bad}: {e}");
    }
}

#[test]
fn a_failed_open_leaves_its_handle_unopened() {
    let text = "plumb-trace 2\nfile 0 f - a\nthread 0 1\nop 0 0 1 open 0 0 r =ENOENT\nop 0 1 1 fstat 0\nend 2\n";
    let e = Trace::parse("f", text).unwrap_err();
    assert!(
        e.cause.to_string().contains("handle 0 is used before it is opened"),
        "{e}"
    );
}
