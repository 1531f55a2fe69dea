//! How a run is made: the program as it is, under a klocks lock, under a peer
//! interposer, or under a setting of the preload.

use super::peer::Peer;
use super::setting::{PreloadLock, Setting, GLIBC};

/// How a run is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// glibc's locks, no preload: the baseline.
    Glibc,
    /// Under a klocks lock.
    Lock(PreloadLock),
    /// Under another interposer (`--peer`).
    Peer(Peer),
    /// glibc's locks through the preload.
    Preloaded,
    /// glibc's locks under the preload's contention profile.
    Profiled,
    /// glibc's locks under the preload's lock validator (`KLOCKS_LOCKDEP=1`).
    Validated,
    /// Under a setting of the preload, named as its variables are.
    Setting(Setting, &'static str),
    /// Under a setting, with the contention profile written as JSON (`--profile`).
    ProfiledJson(Setting),
}

impl Variant {
    pub(super) fn name(self) -> &'static str {
        match self {
            Variant::Glibc => GLIBC,
            Variant::Lock(lock) => lock.name(),
            Variant::Peer(peer) => peer.name,
            Variant::Preloaded => "glibc+preload",
            Variant::Profiled => "glibc+profile",
            Variant::Validated => "glibc+lockdep",
            Variant::Setting(_, name) => name,
            Variant::ProfiledJson(_) => "profile",
        }
    }

    /// A setting's variant: glibc's locks are run without the preload (as a user runs
    /// the program), any other setting through it.
    pub(super) fn of(setting: Setting) -> Variant {
        if setting.is_glibc() {
            return Variant::Glibc;
        }
        // Leaked: a cell names its lock by a `&'static str`, and a run makes a few
        // settings at most.
        Variant::Setting(setting, Box::leak(setting.name().into_boxed_str()))
    }
}
