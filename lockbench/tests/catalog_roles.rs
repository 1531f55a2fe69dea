//! The catalog's `lends_roles` (which locks `lockbench torture --signals same` runs by
//! default) says what `docs/misuse.md` says: the locks whose waiting roles a signal
//! handler on the waiter's own thread is lent are the ones its row "a signal handler
//! takes the lock its own thread is waiting for" names before "the handler gets the
//! lock".

use klocks::catalog::{MutexKind, RwLockKind};

/// The type a lock is known by in the docs: `klocks::Mutex` for the default pair,
/// else its type's name without the crate path or parameters (`RwSem`).
fn doc_name(known_as: Option<&'static str>, type_path: &str) -> String {
    known_as.map_or_else(
        || {
            let base = type_path.split('<').next().expect("a type");
            base.rsplit("::").next().expect("a name").trim().to_owned()
        },
        str::to_owned,
    )
}

/// The backquoted names of misuse.md's lent list.
fn lent_in_docs() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/misuse.md");
    let doc = std::fs::read_to_string(path).expect("docs/misuse.md");
    let row = doc
        .lines()
        .find(|line| line.starts_with("| a signal handler takes the lock its own thread"))
        .expect("misuse.md's row on handlers that take their thread's lock");
    let cells: Vec<&str> = row.split(" | ").collect();
    let (lent, _) = cells[1]
        .split_once(": the handler gets the lock")
        .expect("the row names the lent locks first");
    let mut names: Vec<String> = lent
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    names.sort();
    names
}

#[test]
fn the_locks_that_lend_roles_are_the_ones_misuse_md_names() {
    let mutexes = MutexKind::ALL
        .iter()
        .filter(|kind| kind.lends_roles())
        .map(|kind| doc_name(kind.known_as(), kind.type_path()));
    let rwlocks = RwLockKind::ALL
        .iter()
        .filter(|kind| kind.lends_roles())
        .map(|kind| doc_name(kind.known_as(), kind.type_path()));
    let mut lent: Vec<String> = mutexes.chain(rwlocks).collect();
    lent.sort();
    assert_eq!(
        lent,
        lent_in_docs(),
        "the catalog's lends_roles against misuse.md"
    );
}
