//! Which jobs of a scenario ran at the same time as each other: for a
//! job, how many others of the same run of the scenario (`repeat`) were
//! running while it ran, and the names of a few of them. A job chart says
//! what its job "ran beside"; with thousands of jobs running at once, the
//! answer is a count and [`NAMED`] names, found in O(log n) per name after
//! an O(n·log n) set-up, never a scan of every pair.
//!
//! A job takes part when it has a start and an end on the scenario's clock
//! and ran for some time (its end after its start); two jobs overlap when
//! each started before the other ended.

use crate::model::result::JobResult;
use std::collections::HashMap;

/// The most jobs named beside a job; the others are counted.
pub const NAMED: usize = 3;

/// Who ran beside one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beside {
    /// How many other jobs overlapped it.
    pub count: usize,
    /// The names of up to [`NAMED`] of them (each name once), in the
    /// document's order.
    pub names: Vec<String>,
}

impl Beside {
    /// `ran beside a, b` when every job is named, else `ran beside 9999
    /// jobs, among them a, b, c`.
    pub fn text(&self) -> String {
        let names = self.names.join(", ");
        if self.count <= NAMED {
            format!("ran beside {names}")
        } else {
            format!("ran beside {} jobs, among them {names}", self.count)
        }
    }
}

/// The jobs of one run of a scenario that took part, sorted by start.
struct Run {
    /// Index in the scenario's jobs, by start.
    index: Vec<usize>,
    /// Starts, ascending.
    starts: Vec<f64>,
    /// Ends, ascending (for counting).
    ends: Vec<f64>,
    /// The largest end in each subtree over the jobs by start: a max
    /// segment tree, leaves at `leaves..2 * leaves`.
    tree: Vec<f64>,
    /// Leaves of the tree (a power of two).
    leaves: usize,
}

impl Run {
    /// The run of the jobs at `index` (all timed) of `jobs`.
    fn new(jobs: &[JobResult], mut index: Vec<usize>) -> Run {
        let span = |i: usize| timed(&jobs[i]).unwrap_or((0.0, 0.0));
        index.sort_by(|a, b| span(*a).0.total_cmp(&span(*b).0).then(a.cmp(b)));
        let starts: Vec<f64> = index.iter().map(|i| span(*i).0).collect();
        let mut ends: Vec<f64> = index.iter().map(|i| span(*i).1).collect();
        let leaves = index.len().next_power_of_two().max(1);
        let mut tree = vec![f64::NEG_INFINITY; 2 * leaves];
        tree[leaves..leaves + ends.len()].copy_from_slice(&ends);
        for n in (1..leaves).rev() {
            tree[n] = tree[2 * n].max(tree[2 * n + 1]);
        }
        ends.sort_by(f64::total_cmp);
        Run {
            index,
            starts,
            ends,
            tree,
            leaves,
        }
    }

    /// How many jobs of the run overlap `(a0, a1)`, itself among them:
    /// those that started before `a1`, less those that ended by `a0`
    /// (which all started before it too).
    fn count(&self, (a0, a1): (f64, f64)) -> usize {
        let started = self.starts.partition_point(|b0| *b0 < a1);
        let ended = self.ends.partition_point(|b1| *b1 <= a0);
        started.saturating_sub(ended)
    }

    /// Positions (by start) below `end` whose job ended after `after`, in
    /// order, until `out` holds `want`: a descent of the tree that skips
    /// every subtree ending by `after`.
    fn find(&self, node: usize, (lo, hi): (usize, usize), q: &Query, out: &mut Vec<usize>) {
        if out.len() >= q.want || lo >= q.end || self.tree[node] <= q.after {
            return;
        }
        if hi - lo == 1 {
            out.push(lo);
            return;
        }
        let mid = (lo + hi) / 2;
        self.find(2 * node, (lo, mid), q, out);
        self.find(2 * node + 1, (mid, hi), q, out);
    }
}

/// What [`Run::find`] looks for.
struct Query {
    end: usize,
    after: f64,
    want: usize,
}

/// A job's start and end, when it has both and ran for some time.
fn timed(j: &JobResult) -> Option<(f64, f64)> {
    let (a0, a1) = (j.started_s?, j.ended_s?);
    (a0 < a1).then_some((a0, a1))
}

/// The overlaps of a scenario's jobs, ready to be asked about any of them.
pub struct Overlaps<'a> {
    jobs: &'a [JobResult],
    /// Per run of the scenario (a job's `repeat`), its timed jobs.
    runs: Vec<Run>,
    /// For each job, its run, if it is timed.
    run_of: Vec<Option<usize>>,
}

impl<'a> Overlaps<'a> {
    /// Sorts the timed jobs of each run of the scenario by start:
    /// O(n·log n) for its n jobs.
    pub fn new(jobs: &'a [JobResult]) -> Overlaps<'a> {
        let mut by_run: HashMap<Option<u32>, usize> = HashMap::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut run_of = vec![None; jobs.len()];
        for (i, j) in jobs.iter().enumerate() {
            if timed(j).is_none() {
                continue;
            }
            let r = *by_run.entry(j.repeat).or_insert_with(|| {
                members.push(Vec::new());
                members.len() - 1
            });
            members[r].push(i);
            run_of[i] = Some(r);
        }
        let runs = members.into_iter().map(|m| Run::new(jobs, m)).collect();
        Overlaps { jobs, runs, run_of }
    }

    /// Who ran beside job `i` (an index in the scenario's jobs), if any
    /// job did.
    pub fn beside(&self, i: usize) -> Option<Beside> {
        let run = &self.runs[(*self.run_of.get(i)?)?];
        let span = timed(&self.jobs[i])?;
        let count = run.count(span).saturating_sub(1);
        if count == 0 {
            return None;
        }
        // Itself may be among those found: one more.
        let q = Query {
            end: run.starts.partition_point(|b0| *b0 < span.1),
            after: span.0,
            want: NAMED + 1,
        };
        let mut found = Vec::with_capacity(q.want);
        run.find(1, (0, run.leaves), &q, &mut found);
        let mut others: Vec<usize> = found
            .into_iter()
            .map(|p| run.index[p])
            .filter(|o| *o != i)
            .take(NAMED)
            .collect();
        others.sort_unstable();
        let mut names: Vec<String> = Vec::with_capacity(others.len());
        for o in others {
            let name = &self.jobs[o].name;
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        Some(Beside { count, names })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, span: Option<(f64, f64)>, repeat: Option<u32>) -> JobResult {
        JobResult {
            name: name.into(),
            started_s: span.map(|s| s.0),
            ended_s: span.map(|s| s.1),
            repeat,
            ..Default::default()
        }
    }

    /// The pairwise answer: every other job of the same run whose time
    /// overlaps.
    fn by_pairs(jobs: &[JobResult], i: usize) -> usize {
        let Some((a0, a1)) = timed(&jobs[i]) else {
            return 0;
        };
        (0..jobs.len())
            .filter(|o| *o != i && jobs[*o].repeat == jobs[i].repeat)
            .filter_map(|o| timed(&jobs[o]))
            .filter(|(b0, b1)| *b0 < a1 && a0 < *b1)
            .count()
    }

    #[test]
    fn counts_agree_with_every_pair_and_names_are_few() {
        // Jobs staggered and nested, in two runs, some untimed or empty.
        let mut jobs = Vec::new();
        for k in 0..60u32 {
            let a = f64::from(k % 17) * 0.5;
            let b = a + f64::from(k % 5) * 0.7;
            let span = (k % 11 != 3).then_some((a, b));
            jobs.push(job(&format!("j{}", k % 7), span, Some(1 + k % 2)));
        }
        let o = Overlaps::new(&jobs);
        for i in 0..jobs.len() {
            let want = by_pairs(&jobs, i);
            match o.beside(i) {
                None => assert_eq!(want, 0, "job {i}"),
                Some(b) => {
                    assert_eq!(b.count, want, "job {i}");
                    assert!(!b.names.is_empty() && b.names.len() <= NAMED, "{b:?}");
                }
            }
        }
    }

    #[test]
    fn few_jobs_are_all_named_in_order_and_many_are_counted() {
        let jobs = vec![
            job("a", Some((0.0, 2.0)), None),
            job("b", Some((1.0, 3.0)), None),
            job("c", Some((2.5, 4.0)), None),
            job("b", Some((0.5, 1.5)), None),
            job("x", Some((0.0, 9.0)), Some(2)),
        ];
        let o = Overlaps::new(&jobs);
        assert_eq!(o.beside(0).unwrap().text(), "ran beside b");
        assert_eq!(o.beside(1).unwrap().text(), "ran beside a, c, b");
        assert_eq!(o.beside(4), None);
        let many: Vec<JobResult> = (0..1000)
            .map(|i| job(&format!("j{i}"), Some((0.0, 1.0)), None))
            .collect();
        let o = Overlaps::new(&many);
        assert_eq!(
            o.beside(500).unwrap().text(),
            "ran beside 999 jobs, among them j0, j1, j2"
        );
    }
}
