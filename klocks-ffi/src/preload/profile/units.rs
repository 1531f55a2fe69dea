//! Numbers into text without allocating, so that the report can be written from a
//! signal handler: [`Buffer`] formats into a fixed array, [`Time`] prints a duration.
//! The report and the advice both use them.

use std::fmt::{self, Write};

/// A fixed buffer that formats without allocating (what does not fit is cut).
#[derive(Clone, Copy)]
pub(in crate::preload::profile) struct Buffer<const N: usize> {
    pub(in crate::preload::profile) bytes: [u8; N],
    pub(in crate::preload::profile) len: usize,
}

impl<const N: usize> Buffer<N> {
    pub(in crate::preload::profile) fn new() -> Self {
        Buffer {
            bytes: [0; N],
            len: 0,
        }
    }

    pub(in crate::preload::profile) fn as_str(&self) -> &str {
        // Cut at a character boundary by `write_str`.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> Write for Buffer<N> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let mut take = text.len().min(N - self.len);
        while !text.is_char_boundary(take) {
            take -= 1;
        }
        self.bytes[self.len..self.len + take].copy_from_slice(&text.as_bytes()[..take]);
        self.len += take;
        Ok(())
    }
}

/// A duration in nanoseconds, printed with three significant digits and a unit.
#[derive(Clone, Copy)]
pub(in crate::preload::profile) struct Time(pub(in crate::preload::profile) f64);

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (value, unit) = match self.0 {
            ns if ns < 1e3 => (ns, "ns"),
            ns if ns < 1e6 => (ns / 1e3, "µs"),
            ns if ns < 1e9 => (ns / 1e6, "ms"),
            ns => (ns / 1e9, "s"),
        };
        let precision = match value {
            _ if unit == "ns" => 0,
            v if v < 10.0 => 2,
            v if v < 100.0 => 1,
            _ => 0,
        };
        // Padding applies to the whole, as for a string.
        let mut buffer = Buffer::<24>::new();
        let _ = write!(buffer, "{value:.precision$} {unit}");
        f.pad(buffer.as_str())
    }
}
