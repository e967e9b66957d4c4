//! The placement options ([`crate::job::spec::Placement`]).

use super::{OptionDef, OptionError};
use crate::job::spec::{CpusPolicy, JobSpec, MemPolicy};
use crate::job::values::{parse_count_in, ValueError};
use crate::runner::placement::{configured_cpus, online_nodes, parse_list, MAX_CPUS};

/// A CPU list of this machine (`0-3,6`): every CPU must exist, as in fio.
fn cpu_list(v: &str) -> Result<Vec<u32>, ValueError> {
    parse_list(v, configured_cpus()).map_err(|why| ValueError::Expected {
        value: v.into(),
        expected: format!("a CPU list of this machine like 0-3,6 ({why})"),
    })
}

/// A NUMA node list (`0-1,3` or `all`, the nodes online). Whether each
/// node exists is checked when the job's thread starts
/// ([`crate::runner::placement::apply`]): fio reads a job file naming a
/// node the machine lacks (`--parse-only` accepts its `numa.fio` on one
/// node) and fails when the job starts.
fn node_list(v: &str) -> Result<Vec<u32>, ValueError> {
    if v == "all" {
        return Ok(online_nodes());
    }
    parse_list(v, MAX_CPUS).map_err(|why| ValueError::Expected {
        value: v.into(),
        expected: format!("a NUMA node list like 0-1,3 or all ({why})"),
    })
}

/// fio's `numa_mem_policy`: `mode[:nodes]`.
fn mem_policy(v: &str) -> Result<MemPolicy, ValueError> {
    let (mode, nodes) = match v.split_once(':') {
        Some((m, n)) => (m, Some(n)),
        None => (v, None),
    };
    let wrong = |expected: &str| ValueError::Expected {
        value: v.into(),
        expected: expected.into(),
    };
    Ok(match (mode, nodes) {
        ("default", None) => MemPolicy::Default,
        ("local", None) => MemPolicy::Local,
        ("default" | "local", Some(_)) => {
            return Err(wrong("a policy: default and local take no node list"))
        }
        ("prefer", Some(n)) => match node_list(n)?.as_slice() {
            [one] => MemPolicy::Prefer(*one),
            _ => return Err(wrong("a policy: prefer takes one node (prefer:N)")),
        },
        ("prefer", None) => return Err(wrong("a policy: prefer needs its node (prefer:N)")),
        ("bind", Some(n)) => MemPolicy::Bind(node_list(n)?),
        ("bind", None) => return Err(wrong("a policy: bind needs a node list (bind:0-1)")),
        ("interleave", Some(n)) => MemPolicy::Interleave(node_list(n)?),
        ("interleave", None) => MemPolicy::Interleave(online_nodes()),
        _ => {
            return Err(wrong(
                "a memory policy: default, prefer:N, bind:NODES, interleave[:NODES], local",
            ))
        }
    })
}

/// A CPU bit mask (`cpumask=`, decimal or 0x hex): bit N is CPU N.
fn cpu_mask(v: &str) -> Result<Vec<u32>, ValueError> {
    let bits = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse::<u64>(),
    }
    .map_err(|_| ValueError::Expected {
        value: v.into(),
        expected: "a CPU bit mask (decimal or 0x hex, bit N for CPU N)".into(),
    })?;
    let cpus: Vec<u32> = (0..64).filter(|i| bits & (1 << i) != 0).collect();
    let max = configured_cpus();
    if let Some(c) = cpus.iter().find(|&&c| c >= max) {
        return Err(ValueError::Expected {
            value: v.into(),
            expected: format!(
                "a mask of this machine's CPUs (CPU {c} does not exist; the last is {})",
                max - 1
            ),
        });
    }
    Ok(cpus)
}

/// The placement options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[
    opt!(
        "cpus_allowed",
        [],
        false,
        "CPUs the job's threads may run on: 0-3,6",
        |j, v| {
            j.placement.cpus = Some(cpu_list(v)?);
            Ok(())
        }
    ),
    opt!(
        "cpumask",
        [],
        false,
        "CPUs the job's threads may run on, as a bit mask (3 = CPUs 0 and 1)",
        |j, v| {
            j.placement.cpus = Some(cpu_mask(v)?);
            Ok(())
        }
    ),
    opt!(
        "cpus_allowed_policy",
        [],
        false,
        "shared (every thread on the whole set) or split (one CPU per thread)",
        |j, v| {
            j.placement.cpus_policy = match v {
                "shared" => CpusPolicy::Shared,
                "split" => CpusPolicy::Split,
                _ => {
                    return Err(ValueError::Expected {
                        value: v.into(),
                        expected: "shared or split".into(),
                    })
                }
            };
            Ok(())
        }
    ),
    opt!(
        "numa_cpu_nodes",
        [],
        false,
        "run on the CPUs of these NUMA nodes: 0-1 or all",
        |j, v| {
            j.placement.numa_cpu_nodes = Some(node_list(v)?);
            Ok(())
        }
    ),
    opt!(
        "numa_mem_policy",
        [],
        false,
        "NUMA memory policy: default, prefer:N, bind:NODES, interleave:NODES, local",
        |j, v| {
            j.placement.numa_mem_policy = Some(mem_policy(v)?);
            Ok(())
        }
    ),
    opt!(
        "prio",
        [],
        false,
        "I/O priority level, 0 (highest) to 7",
        |j, v| {
            j.placement.prio = Some(parse_count_in(v, 0, 7)?);
            Ok(())
        }
    ),
    opt!(
        "prioclass",
        [],
        false,
        "I/O priority class: 1 realtime, 2 best effort, 3 idle",
        |j, v| {
            j.placement.prioclass = Some(parse_count_in(v, 0, 3)?);
            Ok(())
        }
    ),
    opt!(
        "nice",
        [],
        false,
        "add this to the job threads' nice value (-20 to 19)",
        |j, v| {
            let n: i32 = v.parse().map_err(|_| ValueError::NotNumber(v.into()))?;
            if !(-20..=19).contains(&n) {
                return Err(ValueError::Expected {
                    value: v.into(),
                    expected: "a nice value from -20 to 19".into(),
                });
            }
            j.placement.nice = Some(n);
            Ok(())
        }
    ),
];

/// Checks the placement options against each other and the rest of the
/// job: nothing to check beyond each value (fio splits any set over any
/// number of threads, round-robin).
pub(super) fn validate(_job: &JobSpec) -> Result<(), OptionError> {
    Ok(())
}
