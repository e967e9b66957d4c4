//! The run journal under hostile conditions: a second kill after a resume
//! of a torn journal loses nothing, a symlinked journal is neither read
//! nor written through, and a journal entry from another pack, origin or
//! signer is refused instead of being passed off as this run's.

use crate::results::kill_after_marker;
use crate::util::{doc, entries, metric, plumb, script, workdir};

const FOREVER: &str = "loop { time::sleep(0.05); }";

fn quick(value: u32) -> String {
    format!(r#"report::metric("done", {value}, "", "higher");"#)
}

#[test]
fn a_second_kill_after_resuming_a_torn_journal_keeps_every_finished_scenario() {
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir(d.join("t")).unwrap();
    let a = script(d, "a.rhai", &quick(1));
    let b = script(d, "b.rhai", FOREVER);
    let c = script(d, "c.rhai", FOREVER);
    let args = ["run", &a, &b, &c, "--target", "t", "--json", "r.json"];
    let mut resume = args.to_vec();
    resume.push("--resume");
    kill_after_marker(d, &args, "journalled a");
    // The kill came while the next line was being written.
    let journal = d.join("r.json.journal");
    let mut text = std::fs::read(&journal).unwrap();
    text.extend_from_slice(b"{\"scenario\":{\"name\":\"b\",\"pa");
    std::fs::write(&journal, text).unwrap();

    script(d, "b.rhai", &quick(2));
    let seen = kill_after_marker(d, &resume, "journalled b");
    assert!(seen.contains("cut short"), "{seen}");

    script(d, "c.rhai", &quick(3));
    let r = plumb(d, &resume);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for s in ["a", "b"] {
        assert!(
            r.stderr.contains(&format!("{s}: finished before")),
            "{s}: {}",
            r.stderr
        );
    }
    let saved = doc(&d.join("r.json"));
    for (s, v) in [("a", 1.0), ("b", 2.0), ("c", 3.0)] {
        assert_eq!(metric(&saved, s, "done"), Some(v), "{s}");
    }
    assert!(!journal.exists());
    assert!(entries(&d.join("t")).is_empty());
}

#[test]
fn a_symlinked_journal_is_refused_and_its_target_untouched() {
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir(d.join("t")).unwrap();
    let a = script(d, "a.rhai", &quick(1));
    let b = script(d, "b.rhai", FOREVER);
    let args = ["run", &a, &b, "--target", "t", "--json", "r.json"];
    kill_after_marker(d, &args, "journalled a");
    // The journal elsewhere, and a link to it where plumb looks.
    let elsewhere = d.join("elsewhere.journal");
    std::fs::rename(d.join("r.json.journal"), &elsewhere).unwrap();
    let before = std::fs::read(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, d.join("r.json.journal")).unwrap();
    script(d, "b.rhai", &quick(2));
    let mut resume = args.to_vec();
    resume.push("--resume");
    // (The killed run's directory stays until a run sweeps it.)
    let target = entries(&d.join("t"));
    let r = plumb(d, &resume);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("symbolic link"), "{}", r.stderr);
    assert_eq!(
        std::fs::read(&elsewhere).unwrap(),
        before,
        "written through the link"
    );
    assert!(!d.join("r.json").exists());
    assert_eq!(entries(&d.join("t")), target);
}

#[test]
fn a_journal_entry_from_another_pack_origin_or_signer_is_refused() {
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir(d.join("t")).unwrap();
    let a = script(d, "a.rhai", &quick(1));
    let b = script(d, "b.rhai", FOREVER);
    let args = ["run", &a, &b, "--target", "t", "--json", "r.json"];
    kill_after_marker(d, &args, "journalled a");
    script(d, "b.rhai", &quick(2));
    let journal = d.join("r.json.journal");
    let honest = std::fs::read_to_string(&journal).unwrap();
    let mut resume = args.to_vec();
    resume.push("--resume");
    let target = entries(&d.join("t"));
    let forged = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3 verified";
    for (field, value, named) in [
        ("pack_sha256", "0".repeat(64), "pack hash"),
        (
            "pack_origin",
            "bundle signed.plumbpack".to_string(),
            "pack origin",
        ),
        ("pack_signer", forged.to_string(), "signer"),
    ] {
        let mut lines: Vec<serde_json::Value> = honest
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        lines[1]["scenario"][field] = serde_json::Value::String(value.clone());
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&journal, &text).unwrap();
        let r = plumb(d, &resume);
        assert_eq!(r.code, 2, "{field}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("another {named}")) && r.stderr.contains("not mixing"),
            "{field}: {}",
            r.stderr
        );
        assert_eq!(std::fs::read_to_string(&journal).unwrap(), text, "{field}");
        assert!(!d.join("r.json").exists(), "{field}");
        assert_eq!(entries(&d.join("t")), target, "{field}");
    }
    // The honest journal resumes, and the result claims no signer.
    std::fs::write(&journal, &honest).unwrap();
    let r = plumb(d, &resume);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let saved = doc(&d.join("r.json"));
    assert_eq!(metric(&saved, "a", "done"), Some(1.0));
    assert!(saved["scenarios"][0]["pack_signer"].is_null(), "{saved}");
}
