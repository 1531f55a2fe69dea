//! Debug builds only: the read locks each thread holds (empty functions otherwise).

#[cfg(all(debug_assertions, not(loom)))]
std::thread_local! {
    static READ: std::cell::RefCell<Vec<(usize, u32)>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[inline]
pub(super) fn acquired_read(_lock: usize) {
    #[cfg(all(debug_assertions, not(loom)))]
    READ.with_borrow_mut(|held| match held.iter_mut().find(|(l, _)| *l == _lock) {
        Some((_, n)) => *n += 1,
        None => held.push((_lock, 1)),
    });
}

#[inline]
pub(super) fn released_read(_lock: usize) {
    #[cfg(all(debug_assertions, not(loom)))]
    READ.with_borrow_mut(|held| {
        let Some(at) = held.iter().position(|(l, _)| *l == _lock) else {
            panic!("klocks: RwSem::unlock_shared by a thread that holds no read lock on it");
        };
        held[at].1 -= 1;
        if held[at].1 == 0 {
            held.swap_remove(at);
        }
    });
}

#[inline]
pub(super) fn check_write_allowed(_lock: usize) {
    #[cfg(all(debug_assertions, not(loom)))]
    READ.with_borrow(|held| {
        if held.iter().any(|(l, _)| *l == _lock) {
            panic!(
                "klocks: RwSem::lock_exclusive by a thread that holds a read lock on it (deadlock)"
            );
        }
    });
}
