//! fio's pacing and ordering options: think time, the Poisson rate
//! process, minimum rates, flows, start delays, `wait_for`, `exitall`,
//! and `continue_on_error` — each checked against what fio's documentation
//! and examples state, side by side with fio where it runs here.

use crate::util::{fio_json, plumb, privileged, require_tool, workdir};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Writes a job file into `dir` and runs `plumb fio` on it (JSON output).
fn run_jobfile(dir: &Path, text: &str) -> Value {
    std::fs::write(dir.join("jobs.fio"), text).unwrap();
    fio_json(dir, &["jobs.fio"])
}

/// The job named `name` in fio's JSON.
fn job<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {json}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// `thinktime` stalls after every `thinktime_blocks` I/Os: 64 I/Os with a
/// 20 ms stall every 16 take at least three stalls, as fio's run does.
#[test]
fn thinktime_stalls_every_n_blocks() {
    require_tool("fio", "--version", "fio");
    let dir = workdir();
    let args = [
        "--name=t",
        "--ioengine=null",
        "--size=256k",
        "--bs=4k",
        "--thinktime=20ms",
        "--thinktime_blocks=16",
    ];
    let ours = fio_json(dir.path(), &args);
    let ms = u(&job(&ours, "t")["job_runtime"]);
    assert_eq!(u(&job(&ours, "t")["read"]["total_ios"]), 64);
    assert!((60..400).contains(&ms), "plumb ran {ms} ms");
    let out = Command::new("fio")
        .args(args)
        .arg("--output-format=json")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let theirs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fio_ms = u(&job(&theirs, "t")["job_runtime"]);
    assert!((60..400).contains(&fio_ms), "fio ran {fio_ms} ms");
    // Without think time the same job takes a few milliseconds.
    let plain = fio_json(dir.path(), &args[..4]);
    assert!(u(&job(&plain, "t")["job_runtime"]) < 50);
}

/// `rate_process=poisson` at 2,000 IOPS: the rate holds within 3 %, and
/// the counts per 100 ms vary as a Poisson process's (variance near the
/// mean), where linear pacing's barely vary.
#[test]
fn poisson_rate_process_has_exponential_gaps() {
    let dir = workdir();
    let dispersion = |process: &str, runtime: &str| {
        let result = dir.path().join(format!("{process}.json"));
        let json = fio_json(
            dir.path(),
            &[
                "--name=p",
                "--ioengine=null",
                "--size=1g",
                "--bs=4k",
                "--rate_iops=2000",
                &format!("--rate_process={process}"),
                "--time_based",
                &format!("--runtime={runtime}"),
                &format!("--json={}", result.display()),
            ],
        );
        let iops = job(&json, "p")["read"]["iops"].as_f64().unwrap();
        let doc: Value = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
        let counts: Vec<f64> = doc["scenarios"][0]["jobs"][0]["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["duration_ms"] == 100)
            .map(|p| p["read_ios"].as_f64().unwrap())
            .collect();
        assert!(counts.len() >= 9, "{counts:?}");
        let mean = counts.iter().sum::<f64>() / counts.len() as f64;
        let var =
            counts.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (counts.len() - 1) as f64;
        (iops, var / mean)
    };
    let (iops, d) = dispersion("poisson", "2");
    assert!((iops - 2000.0).abs() < 60.0, "poisson at {iops} IOPS");
    assert!((0.4..2.5).contains(&d), "poisson counts' variance/mean {d}");
    let (iops, d) = dispersion("linear", "1");
    assert!((iops - 2000.0).abs() < 60.0, "linear at {iops} IOPS");
    assert!(d < 0.3, "linear counts' variance/mean {d}");
}

/// flow.fio's weights: flow=1 against flow=8 in one flow gives 1:8 I/O
/// counts, as fio's run of the same jobs.
#[test]
fn flow_weights_set_the_ratio() {
    require_tool("fio", "--version", "fio");
    let dir = workdir();
    let text = "[global]\nthread\ntime_based\nruntime=700ms\nioengine=null\nsize=100g\nbs=8k\n\
                flow_sleep=1000\n[job2]\nrw=write\nflow=1\n[job1]\nrw=randread\nflow=8\n";
    let ratio = |json: &Value| {
        u(&job(json, "job1")["read"]["total_ios"]) as f64
            / u(&job(json, "job2")["write"]["total_ios"]).max(1) as f64
    };
    let ours = ratio(&run_jobfile(dir.path(), text));
    assert!((7.5..8.5).contains(&ours), "plumb's ratio {ours}");
    let out = Command::new("fio")
        .args(["jobs.fio", "--output-format=json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let theirs = ratio(&serde_json::from_slice(&out.stdout).unwrap());
    assert!((7.0..9.0).contains(&theirs), "fio's ratio {theirs}");
}

/// waitfor.fio's order: a `wait_for` job starts once its waitee ended, and a
/// `startdelay` job after its delay, while the others run at once.
#[test]
fn wait_for_and_startdelay_order_starts() {
    let dir = workdir();
    let json = run_jobfile(
        dir.path(),
        "[global]\nioengine=null\nsize=1g\nbs=4k\ntime_based\nruntime=300ms\n\
         [a]\nrw=read\n[b]\nwait_for=a\nrw=read\n[c]\nstartdelay=150ms\nrw=read\n[d]\nrw=read\n",
    );
    let start = |n| u(&job(&json, n)["job_start"]);
    let (a, b, c, d) = (start("a"), start("b"), start("c"), start("d"));
    assert!(
        a > 1_600_000_000_000,
        "job_start is ms since the epoch: {a}"
    );
    assert!(d.abs_diff(a) < 100, "a at {a}, d at {d}");
    assert!(b >= a + 290, "b at {b} starts after a (at {a}) ended");
    assert!(c >= a + 140 && c < b, "c at {c}: after its delay, before b");
    for n in ["a", "b", "c", "d"] {
        assert!(u(&job(&json, n)["read"]["total_ios"]) > 0, "{n} ran");
    }
}

/// `exitall`: when the short job ends, the long one in its group stops;
/// `exit_what=all` also ends the run (a later stonewalled job never runs),
/// `exit_what=stonewall` lets it run.
#[test]
fn exitall_stops_the_others() {
    let dir = workdir();
    let text = |what: &str| {
        format!(
            "[global]\nioengine=null\nsize=1g\nbs=4k\nrw=read\ntime_based\nexitall\n\
             [short]\nruntime=100ms\nexit_what={what}\n[long]\nruntime=20s\n\
             [later]\nstonewall\nruntime=100ms\n"
        )
    };
    let t = std::time::Instant::now();
    let json = run_jobfile(dir.path(), &text("all"));
    assert!(t.elapsed().as_secs() < 10, "the long job was stopped");
    assert!(u(&job(&json, "long")["job_runtime"]) < 5000);
    let later = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == "later");
    assert!(
        later.is_none_or(|j| j["read"]["total_ios"] == 0),
        "later ran: {later:?}"
    );
    let json = run_jobfile(dir.path(), &text("stonewall"));
    assert!(u(&job(&json, "long")["job_runtime"]) < 5000);
    assert!(u(&job(&json, "later")["read"]["total_ios"]) > 0);
}

/// `rate_iops_min` over `rate_cycle`: a job capped below its minimum fails
/// after fio's two-second settling time, with fio's message; with
/// `exitall_on_error` its failure stops the other job.
#[test]
fn rate_iops_min_fails_a_slow_job() {
    let dir = workdir();
    std::fs::write(
        dir.path().join("jobs.fio"),
        "[global]\nioengine=null\nsize=1g\ntime_based\n\
         [slow]\nrate_iops=200\nrate_iops_min=500\nrate_cycle=300\nruntime=10s\nexitall_on_error\n\
         [other]\nruntime=20s\n",
    )
    .unwrap();
    let t = std::time::Instant::now();
    let r = plumb(dir.path(), &["fio", "jobs.fio", "--output-format=json"]);
    assert!(t.elapsed().as_secs() < 8, "the other job was stopped");
    assert_ne!(r.code, 0, "{}", r.stderr);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains("slow: rate_iops_min=500 not met, got"),
        "{all}"
    );
    let json = r.json();
    assert_eq!(u(&job(&json, "slow")["error"]), libc::EIO as u64);
    assert!(u(&job(&json, "slow")["job_runtime"]) < 4000);
    assert!(u(&job(&json, "other")["job_runtime"]) < 5000);
    assert_eq!(u(&job(&json, "other")["error"]), 0);
}

/// enospc-pressure.fio's `continue_on_error=write` with
/// `ignore_error=,ENOSPC`: writes into a full tmpfs go on, counted in
/// `total_err` with `first_error`, as fio counts them.
#[test]
fn continue_on_error_counts_enospc() {
    if !privileged("continue_on_error_counts_enospc", "a small tmpfs mount") {
        return;
    }
    require_tool("fio", "--version", "fio");
    let dir = workdir();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(ok.success(), "mount a 64 KiB tmpfs");
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&mnt);
    let args = [
        "--name=x",
        "--filename=f",
        "--rw=write",
        "--bs=4k",
        "--size=1M",
        "--continue_on_error=write",
        "--ignore_error=,ENOSPC",
        "--error_dump=0",
        "--output-format=json",
    ];
    let run = |program: &Path| -> Value {
        // A sparse file of the job's size: its blocks are allocated as
        // they are written, and the 17th does not fit.
        let f = mnt.join("f");
        let _ = std::fs::remove_file(&f);
        std::fs::File::create(&f).unwrap().set_len(1 << 20).unwrap();
        let mut cmd = Command::new(program);
        if program == Path::new("fio") {
            cmd.args(args);
        } else {
            cmd.arg("fio").args(args);
        }
        let out = cmd.current_dir(&mnt).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let ours = run(&crate::util::plumb_bin());
    let theirs = run(Path::new("fio"));
    for (who, json) in [("plumb", &ours), ("fio", &theirs)] {
        let x = job(json, "x");
        assert_eq!(u(&x["first_error"]), libc::ENOSPC as u64, "{who}: {x}");
        assert_eq!(u(&x["error"]), libc::ENOSPC as u64, "{who}");
        assert!(u(&x["total_err"]) >= 200, "{who}: {}", x["total_err"]);
        assert_eq!(u(&x["write"]["total_ios"]), 256, "{who}");
    }
    assert_eq!(
        u(&job(&ours, "x")["total_err"]),
        u(&job(&theirs, "x")["total_err"])
    );
    // Without continue_on_error the first ENOSPC ends the job.
    let f = mnt.join("f");
    std::fs::File::create(&f).unwrap().set_len(1 << 20).unwrap();
    let r = plumb(
        &mnt,
        &["fio", "--name=x", "--filename=f", "--rw=write", "--size=1M"],
    );
    assert_ne!(r.code, 0);
}

/// Values the pacing options refuse before any I/O, each naming its option.
#[test]
fn pacing_values_are_checked() {
    let dir = workdir();
    for (args, option) in [
        (
            &["--thinktime=10", "--thinktime_spin=20"][..],
            "thinktime_spin",
        ),
        (&["--ignore_error=EWHAT"][..], "ignore_error"),
        (&["--flow=1001"][..], "flow"),
        (&["--startdelay=5-1"][..], "startdelay"),
        (&["--exit_what=some"][..], "exit_what"),
        (&["--rate_process=bursty"][..], "rate_process"),
        (&["--latency_percentile=101"][..], "latency_percentile"),
        (&["--continue_on_error=maybe"][..], "continue_on_error"),
    ] {
        let mut all = vec!["fio", "--name=v", "--ioengine=null", "--size=1m"];
        all.extend_from_slice(args);
        let r = plumb(dir.path(), &all);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("option '{option}'")),
            "{args:?}: {}",
            r.stderr
        );
    }
}
