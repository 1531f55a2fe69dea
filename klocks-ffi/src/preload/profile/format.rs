//! `KLOCKS_PROFILE_FORMAT`: how the report is written. `text` (the default) for a
//! person; `json`, one JSON object a line (the run, each listed lock, each site, each
//! contention point), for a program; `folded`, the folded-stacks text that flame-graph
//! tools read (`frame;frame;frame wait_ns`, the outermost caller first), for a
//! picture of where threads waited; `pprof`, a gzipped `profile.proto` of the waiting
//! stacks with Go's mutex-profile measures, for `go tool pprof` and speedscope
//! (`report/pprof.rs`: a binary file, written at exit only).
//!
//! Read as `KLOCKS_LOCK` is (`config`): ASCII case and surrounding blanks ignored, an
//! empty value as unset; a value that is no format gets one line, with the nearest
//! name if one is close, and the report is written as text.

use super::super::config::{did_you_mean, setting};
use crate::preload::settings::PROFILE_FORMAT;

/// How the report is written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Format {
    Text,
    Json,
    Folded,
    Pprof,
}

impl Format {
    /// Every format, with its name.
    const ALL: [(Format, &'static str); 4] = [
        (Format::Text, "text"),
        (Format::Json, "json"),
        (Format::Folded, "folded"),
        (Format::Pprof, "pprof"),
    ];

    /// The format `value` (the variable's value, if set) names; `Err` holds the
    /// complaint to print, and the report is then text.
    pub(super) fn parse(value: Option<&str>) -> Result<Format, String> {
        let Some(name) = setting(value) else {
            return Ok(Format::Text);
        };
        Format::ALL
            .into_iter()
            .find(|(_, known)| known.eq_ignore_ascii_case(name))
            .map(|(format, _)| format)
            .ok_or_else(|| {
                format!(
                    "{PROFILE_FORMAT}={name:?} is not a report format{} (use text, json, folded or pprof); writing text",
                    did_you_mean(name, Format::ALL.map(|(_, known)| known)),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::Format;

    #[test]
    fn names_are_read_as_klocks_lock_is() {
        assert_eq!(Format::parse(None), Ok(Format::Text));
        assert_eq!(Format::parse(Some("")), Ok(Format::Text));
        assert_eq!(Format::parse(Some("  ")), Ok(Format::Text));
        assert_eq!(Format::parse(Some(" JSON ")), Ok(Format::Json));
        assert_eq!(Format::parse(Some("Folded")), Ok(Format::Folded));
        assert_eq!(Format::parse(Some("PPROF")), Ok(Format::Pprof));
        let bad = Format::parse(Some("jsn")).unwrap_err();
        assert_eq!(
            bad,
            "KLOCKS_PROFILE_FORMAT=\"jsn\" is not a report format; did you mean `json`? \
             (use text, json, folded or pprof); writing text"
        );
        let far = Format::parse(Some("protobuf")).unwrap_err();
        assert!(!far.contains("did you mean"), "{far}");
    }
}
