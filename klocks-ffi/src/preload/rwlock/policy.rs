//! The interposed rwlocks' policies: which lock type runs the program's rwlocks, for
//! each reader-writer lock of the catalog (a [`RwLockKind`] is the policy), and the
//! body of a `pthread_rwlock_t` that every one of them fits in. Everything here
//! expands from the catalog's list ([`klocks_core::for_each_rwlock!`]): a
//! reader-writer lock added there is offered by `KLOCKS_RWLOCK` without a line here.

use std::mem::{align_of, size_of};

#[cfg(doc)]
use klocks_core::catalog::RwLockKind;

/// The lock's words in a klocks-managed `pthread_rwlock_t`: room for the largest
/// lock of the catalog (the rwsem, 48 bytes), aligned to 8 as `pthread_rwlock_t`.
pub(super) type Body = [u64; 6];

/// Whether a lock of type `L` fits in the [`Body`], size and alignment.
const fn fits<L>() -> bool {
    size_of::<L>() <= size_of::<Body>() && align_of::<L>() <= align_of::<Body>()
}

/// Declares, from the catalog's entries, the check that every reader-writer lock
/// fits the [`Body`], and `with_policy!`, the one map from a policy to its lock type
/// (used by the rwlock's bodies and the routes' choice). `$d` is a literal `$`, so
/// that the generated macro can declare its own metavariables.
macro_rules! policies {
    ($d:tt
        $(
            $(#[$attr:meta])* $variant:ident => $ty:ty {
                name: $name:literal,
                about: $about:literal,
                use_when: $use_when:literal,
                avoid_when: $avoid_when:literal,
                $(known_as: $known_as:literal,)?
                lends_roles: $lends_roles:literal,
                $($field:ident: $value:tt,)*
            };
        )*
    ) => {
        $($(#[$attr])* const _: () = assert!(fits::<$ty>());)*

        /// Runs `$body` with `$Lock` the lock type of `$policy`, a [`RwLockKind`].
        macro_rules! with_policy {
            ($d policy:expr, $d Lock:ident => $d body:expr) => {
                match $d policy {
                    $($(#[$attr])* klocks_core::catalog::RwLockKind::$variant => {
                        type $d Lock = $ty;
                        $d body
                    })*
                }
            };
        }
        pub(in crate::preload) use with_policy;
    };
}

klocks_core::for_each_rwlock!(policies! { $ });
