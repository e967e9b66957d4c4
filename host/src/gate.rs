//! Threads that prepare apart and start together: the timed phase of the CPU
//! kernels and of the memory bandwidth test.
//!
//! Unlike a `Barrier`, the start line never waits for a thread that could not
//! be started or that died while preparing: the run then ends with an error,
//! and the threads already waiting are sent home without timing anything.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Most threads one gated run starts (a CPU kernel or a memory test).
pub const MAX_THREADS: u32 = 1024;

/// Stack of each gated thread. The kernels keep their data on the heap, so a
/// small stack serves; with the default 2 MiB, the 4096 threads a scenario may
/// run in the background would reserve 8 GiB of address space.
const STACK_BYTES: usize = 256 * 1024;

/// Runs `body` on `threads` named threads. Each calls the `start` function
/// it is given once its preparation is done; `start` returns true when every
/// thread is ready (time from there) and false when the run is abandoned
/// (return at once). Returns what each thread returned and the wall seconds
/// from the start to the last thread's end.
pub(crate) fn run_together<T: Send>(
    label: &str,
    threads: u32,
    body: impl Fn(usize, &dyn Fn() -> bool) -> T + Sync,
) -> Result<(Vec<T>, f64), String> {
    let gate = Gate::default();
    let ready = AtomicU32::new(0);
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(threads as usize);
        let mut failure = None;
        for i in 0..threads as usize {
            let (gate, ready, body) = (&gate, &ready, &body);
            let spawned = std::thread::Builder::new()
                .name(format!("{label}-{i}"))
                .stack_size(STACK_BYTES)
                .spawn_scoped(s, move || {
                    let start = || {
                        ready.fetch_add(1, Ordering::Release);
                        gate.wait()
                    };
                    body(i, &start)
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    failure = Some(format!("could not start {label} thread {i}: {e}"));
                    break;
                }
            }
        }
        // Wait until every started thread is prepared (or one has ended early).
        while failure.is_none()
            && (ready.load(Ordering::Acquire) as usize) < handles.len()
            && !handles.iter().any(|h| h.is_finished())
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        gate.open(failure.is_none() && !handles.iter().any(|h| h.is_finished()));
        let t0 = Instant::now();
        let mut out = Vec::with_capacity(handles.len());
        for h in handles {
            match h.join() {
                Ok(v) => out.push(v),
                Err(_) => {
                    failure.get_or_insert_with(|| format!("a {label} thread failed"));
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok((out, t0.elapsed().as_secs_f64())),
        }
    })
}

/// The start line: threads wait until it opens to "go" or to "abandon".
#[derive(Default)]
struct Gate {
    state: Mutex<Option<bool>>,
    opened: Condvar,
}

impl Gate {
    fn open(&self, go: bool) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = Some(go);
        self.opened.notify_all();
    }

    fn wait(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(go) = *state {
                return go;
            }
            state = self.opened.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_dies_while_preparing_ends_the_run_without_a_hang() {
        let r = run_together("t", 4, |i, start| {
            if i == 2 {
                panic!("preparing failed");
            }
            start()
        });
        assert_eq!(r.unwrap_err(), "a t thread failed");
    }

    #[test]
    fn all_threads_start_when_all_are_ready() {
        let (started, _) = run_together("t", 3, |_, start| start()).unwrap();
        assert_eq!(started, vec![true; 3]);
    }
}
