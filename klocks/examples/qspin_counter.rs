//! A shared histogram behind klocks locks: `cargo run --release --example qspin_counter`.
//!
//! One `QSpinMutex` guards a small histogram updated by one thread per CPU; an array
//! of `PaddedQSpinMutex` counters shows seed 002's cache-line isolation: each
//! thread's hot lock on its own line.

use std::sync::Arc;
use std::thread;

use klocks::{PaddedQSpinMutex, QSpinMutex};

fn main() {
    let threads = thread::available_parallelism().map_or(2, |n| n.get());
    let histogram = Arc::new(QSpinMutex::new([0u64; 8]));
    let per_thread: Arc<Vec<PaddedQSpinMutex<u64>>> =
        Arc::new((0..threads).map(|_| PaddedQSpinMutex::new(0)).collect());

    let workers: Vec<_> = (0..threads)
        .map(|id| {
            let (histogram, per_thread) = (Arc::clone(&histogram), Arc::clone(&per_thread));
            thread::spawn(move || {
                for i in 0..100_000u64 {
                    histogram.lock()[(i % 8) as usize] += 1;
                    *per_thread[id].lock() += 1;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker panicked");
    }

    let total: u64 = histogram.lock().iter().sum();
    let own: u64 = per_thread.iter().map(|c| *c.lock()).sum();
    println!("{threads} threads: histogram total {total}, per-thread total {own}");
    println!(
        "sizes: QSpinLock {} B, padded {} B",
        std::mem::size_of::<klocks::QSpinLock>(),
        std::mem::size_of::<klocks::Padded<klocks::QSpinLock>>()
    );
    assert_eq!(total, own);
}
