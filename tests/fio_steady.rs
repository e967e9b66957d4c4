//! fio's steady state (`ss=`, `ss_dur`, `ss_ramp`): a time-based job stops
//! once its throughput settles, and fio's `steadystate` block says so.

use crate::util::{fio_json, workdir};

/// A null-engine job settles at once: it stops after the ramp and a
/// window, well before its runtime, with the block fio writes.
#[test]
fn a_settled_job_stops_at_steady_state() {
    let dir = workdir();
    let doc = fio_json(
        dir.path(),
        &[
            "--name=s",
            "--ioengine=null",
            "--rw=write",
            "--bs=128k",
            "--size=128m",
            "--time_based",
            "--runtime=20",
            "--ss=iops:50%",
            "--ss_dur=2s",
            "--ss_ramp=1s",
            "--numjobs=2",
            "--group_reporting",
        ],
    );
    let job = &doc["jobs"][0];
    let ss = &job["steadystate"];
    assert_eq!(ss["attained"], 1, "{ss}");
    assert_eq!(ss["ss"], "iops:50.000000%");
    assert_eq!(ss["duration"], 2);
    assert_eq!(ss["data"]["iops"].as_array().unwrap().len(), 2);
    let runtime = job["job_runtime"].as_u64().unwrap();
    assert!(
        (2500..10_000).contains(&runtime),
        "stopped at steady state after the ramp and a window of 2 s, not at 20 s: {runtime} ms"
    );
    // The samples are the group's: both clones' I/Os.
    let mean = ss["data"]["iops_mean"].as_f64().unwrap();
    let iops = job["write"]["iops"].as_f64().unwrap();
    assert!(
        (mean / iops - 1.0).abs() < 0.5,
        "window mean {mean} vs job {iops}"
    );
}

/// A bound no real job meets (a slope of 0 exactly) is never attained:
/// the job runs its whole runtime and says so.
#[test]
fn an_unmet_bound_runs_the_whole_runtime() {
    let dir = workdir();
    let doc = fio_json(
        dir.path(),
        &[
            "--name=s",
            "--ioengine=null",
            "--rw=read",
            "--bs=4k",
            "--size=1m",
            "--time_based",
            "--runtime=2",
            "--ss=iops_slope:0%",
            "--ss_dur=1s",
            "--ss_interval=250ms",
        ],
    );
    let job = &doc["jobs"][0];
    assert_eq!(job["steadystate"]["attained"], 0, "{}", job["steadystate"]);
    assert!(job["job_runtime"].as_u64().unwrap() >= 1900);
}
