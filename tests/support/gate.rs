//! Modules that were test binaries of their own keep running apart from each other.
//!
//! Cargo runs test binaries one after another, and the tests of one binary side by side. Folding
//! several binaries into one would run every module's tests beside every other's: the heavy ones
//! (gpudeck in tmux, real containers, Slurm) then share two cores with each other and
//! their deadlines, written for the load of their own binary, can pass by. A test that takes the
//! gate of its module runs beside the tests of that module only, as before the fold.
//!
//! `cargo test` has no way to say this (its harness knows no groups); cargo-nextest's test groups
//! would, but nextest runs each test in a process of its own, where this in-process gate does
//! nothing, and the suite's command is `cargo test --workspace`, which needs no tool beyond cargo.

use std::sync::{Condvar, Mutex};

/// The module whose tests hold the gate now, and how many of them.
static HOLDER: Mutex<(Option<&'static str>, usize)> = Mutex::new((None, 0));
static CHANGED: Condvar = Condvar::new();

/// Held while a test runs; dropping it (also when the test panics) lets the next module in.
pub struct Gate;

/// Waits until no test of another module holds the gate, then holds it for `module`
/// (`module_path!()` of the test).
pub fn gate(module: &'static str) -> Gate {
    let mut holder = HOLDER.lock().unwrap_or_else(|e| e.into_inner());
    while holder.0.is_some_and(|m| m != module) {
        holder = CHANGED.wait(holder).unwrap_or_else(|e| e.into_inner());
    }
    holder.0 = Some(module);
    holder.1 += 1;
    Gate
}

impl Drop for Gate {
    fn drop(&mut self) {
        let mut holder = HOLDER.lock().unwrap_or_else(|e| e.into_inner());
        holder.1 -= 1;
        if holder.1 == 0 {
            holder.0 = None;
            CHANGED.notify_all();
        }
    }
}

#[test]
fn tests_of_one_module_share_the_gate_and_another_module_waits() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    // Modules of its own, so no real test is held up.
    let first = gate("gate-test::a");
    let second = gate("gate-test::a");
    let entered = Arc::new(AtomicBool::new(false));
    let waiter = {
        let entered = Arc::clone(&entered);
        std::thread::spawn(move || {
            let _other = gate("gate-test::b");
            entered.store(true, Ordering::SeqCst);
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !entered.load(Ordering::SeqCst),
        "b entered while a held the gate"
    );
    drop(first);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !entered.load(Ordering::SeqCst),
        "b entered while one test of a still ran"
    );
    drop(second);
    waiter.join().expect("b's test ran");
    assert!(entered.load(Ordering::SeqCst));
}
