//! The loom model of the probe's model half.

use super::*;

#[test]
fn the_model_answers_what_a_thread_set() {
    loom::model(|| {
        let setter = loom::thread::spawn(|| set_model_answer(Some(false)));
        let mut watch = Watch::new(current_tid());
        let early = watch.owner_running();
        assert!(early.is_none() || early == Some(false), "{early:?}");
        setter.join().unwrap();
        assert_eq!(watch.owner_running(), Some(false));
    });
}

#[test]
fn model_tids_are_distinct_and_stable() {
    loom::model(|| {
        let other = loom::thread::spawn(current_tid);
        let mine = current_tid();
        assert_eq!(current_tid(), mine);
        assert_ne!(other.join().unwrap(), mine);
    });
}
