//! The input vocabulary: durations, sizes, bandwidths, shares, headers and `knob=value`
//! settings, parsed the same way wherever they come from (flags, target files, scenario files,
//! the lab's query strings). A bare number has one meaning everywhere: seconds for a duration;
//! a size needs its unit. Every value is bounded; a bad one is an `InputError` in one line, which
//! the command line maps to exit status 2.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// Bad input from the user (a flag, a file, a value): reported in one line, exit status 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

impl InputError {
    /// The same error with where it was found in front ("t.toml:4: ...").
    pub fn at(self, place: &str) -> InputError {
        InputError(format!("{place}: {}", self.0))
    }
}

/// The longest duration any input may give: long enough for any run, short enough that adding
/// it to a clock never overflows.
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

/// The most of a user's (or a peer's) text an error message repeats.
pub const ECHO_CHARS: usize = 80;

/// `text` as an error message may repeat it: control characters escaped (a NUL, an escape
/// sequence or a newline cannot reach the terminal or break the one line), at most
/// ECHO_CHARS characters, a longer one cut with "…" and its whole length.
pub fn echo(text: &str) -> String {
    echo_max(text, ECHO_CHARS)
}

/// `echo`, at most `max` characters.
pub fn echo_max(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (shown, c) in text.chars().enumerate() {
        if shown >= max {
            return format!("{out}… ({} characters)", text.chars().count());
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `name: ` in front of a message, when there is a name.
fn named(name: &str, message: String) -> InputError {
    if name.is_empty() { InputError(message) } else { InputError(format!("{name}: {message}")) }
}

/// "30s", "250ms", "2m", "1h30m"; a bare number is seconds ("1.5" is 1.5 s).
pub fn duration(name: &str, text: &str) -> Result<Duration, InputError> {
    let t = text.trim();
    let parsed = match t.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Duration::try_from_secs_f64(secs).ok(),
        Ok(_) => None,
        Err(_) => match humantime::parse_duration(t) {
            Ok(d) => Some(d),
            Err(e) => return Err(named(name, format!("bad duration {t:?} ({e})"))),
        },
    };
    match parsed {
        Some(d) if d <= MAX_DURATION => Ok(d),
        _ => Err(named(name, format!("bad duration {t:?}: expected 0s to 366 days, e.g. 30s, 250ms, 2m"))),
    }
}

/// A point in time as `runs --since` takes it: RFC 3339 with `Z` or an offset
/// (2026-11-25T12:00:00+01:00), a date (2026-11-25, midnight UTC), or a time ago (90m, 2d).
pub fn instant(name: &str, text: &str, now: SystemTime) -> Result<SystemTime, InputError> {
    let t = text.trim();
    let bad = || {
        named(
            name,
            format!(
                "bad time {t:?}: expected RFC 3339 (2026-11-25T12:00:00Z, 2026-11-25T12:00:00+01:00), a date (2026-11-25) or a time ago (1h, 2d)"
            ),
        )
    };
    if t.starts_with(|c: char| c.is_ascii_digit()) && t.len() >= 10 && t.as_bytes()[4] == b'-' {
        return rfc3339(t).ok_or_else(bad);
    }
    // A bare number has no unit to read it by: humantime refuses it, as it should here.
    let ago = humantime::parse_duration(t).map_err(|_| bad())?;
    now.checked_sub(ago).ok_or_else(bad)
}

/// RFC 3339 with `Z` or a `+hh:mm`/`-hh:mm` offset, or a bare date (midnight UTC). Stored
/// runs' start times read through this too, so `--since` compares times, not text.
pub fn rfc3339(text: &str) -> Option<SystemTime> {
    let t = text.trim();
    if t.len() == 10 {
        return humantime::parse_rfc3339(&format!("{t}T00:00:00Z")).ok();
    }
    let (local, offset_secs) = match t.strip_suffix(['Z', 'z']) {
        Some(local) => (local, 0i64),
        None => {
            let cut = t.len().checked_sub(6)?;
            let (local, offset) = (t.get(..cut)?, t.get(cut..)?);
            let sign = match offset.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (h, m) = offset[1..].split_once(':')?;
            let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
            if h > 23 || m > 59 {
                return None;
            }
            (local, sign * (h * 3600 + m * 60))
        }
    };
    let as_if_utc = humantime::parse_rfc3339(&format!("{local}Z")).ok()?;
    // 12:00+01:00 is 11:00 UTC: the offset is taken back off.
    let shift = Duration::from_secs(offset_secs.unsigned_abs());
    if offset_secs >= 0 { as_if_utc.checked_sub(shift) } else { as_if_utc.checked_add(shift) }
}

/// "4GiB", "512MiB", "2G", "1500M", "800000K", "4096B"; binary units throughout (MB is MiB,
/// as free -m and /proc count memory). A bare number other than 0 is refused: 4 could mean
/// bytes or GiB, and a guess would be silently wrong by a factor of a billion. The result is
/// in KiB (what /proc reports).
pub fn size_kib(name: &str, text: &str) -> Result<u64, InputError> {
    size_bytes(name, text).map(|b| b / 1024)
}

/// `size_kib`, in bytes.
pub fn size_bytes(name: &str, text: &str) -> Result<u64, InputError> {
    let t = text.trim();
    let bad = || named(name, format!("bad size {t:?} (e.g. 4GiB, 512MiB)"));
    let digits = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let value: f64 = t[..digits].parse().map_err(|_| bad())?;
    let bytes_per_unit = match t[digits..].trim().to_ascii_lowercase().as_str() {
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0_f64.powi(3),
        "t" | "tb" | "tib" => 1024.0_f64.powi(4),
        "b" => 1.0,
        "" if value == 0.0 => 0.0,
        "" => return Err(named(name, format!("size {t:?} has no unit: give one, e.g. {t}GiB or {t}MiB"))),
        _ => return Err(bad()),
    };
    let bytes = value * bytes_per_unit;
    // 1 PiB: more memory than any server webtune will meet.
    if !(bytes.is_finite() && bytes <= 1024.0_f64.powi(5)) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// A number with at most three decimals and no trailing zeros: "0.5", "2", "0.333" (CPUs,
/// rates as a user writes them).
pub fn format_decimal(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Bytes in the form `size_bytes` reads back: "512MiB", "1.5GiB", "4096B" (the largest unit
/// that gives at most one decimal without loss beyond it).
pub fn format_bytes(bytes: u64) -> String {
    for (unit, size) in [("TiB", 1u64 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= size {
            let value = bytes as f64 / size as f64;
            return if bytes.is_multiple_of(size) {
                format!("{}{unit}", bytes / size)
            } else {
                format!("{value:.1}{unit}")
            };
        }
    }
    format!("{bytes}B")
}

/// "33.6kbps" (bits/s: bps, kbps, Mbps, Gbps) or "100KB/s" (bytes/s: B/s, KB/s, KiB/s, MB/s,
/// MiB/s) -> bytes per second, at least 1.
pub fn bandwidth(name: &str, text: &str) -> Result<f64, InputError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || named(name, format!("bad bandwidth {text:?}: expected e.g. 33.6kbps, 1Mbps, 100KB/s"));
    let n: f64 = num.parse().map_err(|_| bad())?;
    let factor = match unit.trim().to_ascii_lowercase().as_str() {
        "bps" => 1.0 / 8.0,
        "kbps" => 1e3 / 8.0,
        "mbps" => 1e6 / 8.0,
        "gbps" => 1e9 / 8.0,
        "b/s" => 1.0,
        "kb/s" => 1e3,
        "kib/s" => 1024.0,
        "mb/s" => 1e6,
        "mib/s" => 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let bytes = n * factor;
    if !(bytes.is_finite() && (1.0..=1e12).contains(&bytes)) {
        return Err(bad());
    }
    Ok(bytes)
}

/// "20%" or "0.2" -> a share from 0 to 1. Callers that need an open end (a share of clients
/// above 0, a tolerance below 1) check it themselves.
pub fn share(name: &str, text: &str) -> Result<f64, InputError> {
    let t = text.trim();
    let share = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    };
    match share {
        Ok(s) if (0.0..=1.0).contains(&s) => Ok(s),
        _ => Err(named(name, format!("bad share {text:?}: expected a percentage from 0% to 100%, e.g. 20%"))),
    }
}

/// "Name: value", as curl -H. The name is a token; the value cannot break the request's lines.
pub fn header(text: &str) -> Result<(String, String), InputError> {
    let bad = || InputError(format!("bad header {text:?}: expected 'Name: value'"));
    let (name, value) = text.split_once(':').ok_or_else(bad)?;
    let name = name.trim();
    let valid_name = !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':');
    if !valid_name || value.contains(['\r', '\n', '\0']) {
        return Err(bad());
    }
    Ok((name.to_string(), value.trim().to_string()))
}

/// A header value given on its own (a content type): one line, no control characters.
pub fn header_value(name: &str, text: &str) -> Result<String, InputError> {
    if text.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
        return Err(named(name, format!("bad header value {text:?}: control characters (CR, LF) are not allowed")));
    }
    Ok(text.trim().to_string())
}

/// "knob=value" (as --set takes it).
pub fn setting(text: &str) -> Result<(String, String), InputError> {
    let shown = || echo(text);
    let (k, v) =
        text.split_once('=').ok_or_else(|| InputError(format!("--set \"{}\": expected knob=value", shown())))?;
    if k.trim().is_empty() {
        return Err(InputError(format!("--set \"{}\": no knob name", shown())));
    }
    Ok((k.trim().to_string(), v.trim().to_string()))
}

/// on/off, yes/no, true/false, 1/0 (as servers' configurations say it); anything else is off.
pub fn is_on(text: &str) -> bool {
    matches!(text.trim().to_ascii_lowercase().as_str(), "on" | "yes" | "true" | "1")
}

/// The most any input file (a body, a URL list, a scenario, a target file, a report to merge)
/// may hold: a device or an endless
/// file is refused, not read until memory runs out.
pub const MAX_INPUT_FILE: u64 = 64 * 1024 * 1024;

/// Reads a regular file of at most `MAX_INPUT_FILE` bytes. Opened without blocking, and
/// refused unless it is a regular file: a FIFO (`Include fifo.conf`, a target file that is
/// one) would hold the open until a writer came, a device would never end.
pub fn read_bounded(path: &Path, what: &str) -> Result<Vec<u8>, InputError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |e: std::io::Error| InputError(format!("cannot read {what} {}: {e}", path.display()));
    let mut file =
        std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        let kind =
            if meta.file_type().is_dir() { "a directory" } else { "not a regular file (a FIFO, a device, a socket)" };
        return Err(InputError(format!("cannot read {what} {}: {kind}", path.display())));
    }
    let mut bytes = Vec::new();
    (&mut file).take(MAX_INPUT_FILE + 1).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > MAX_INPUT_FILE {
        return Err(InputError(format!(
            "cannot read {what} {}: larger than the limit of {} MiB",
            path.display(),
            MAX_INPUT_FILE >> 20
        )));
    }
    Ok(bytes)
}

/// Reads a text file of at most `MAX_INPUT_FILE` bytes.
pub fn read_text(path: &Path, what: &str) -> Result<String, InputError> {
    String::from_utf8(read_bounded(path, what)?)
        .map_err(|_| InputError(format!("cannot read {what} {}: not UTF-8 text", path.display())))
}

/// Deserialisers for input files (TOML): the same vocabulary, so a file's mistakes come back
/// from serde with their line.
pub mod de {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    /// A TOML scalar as text: strings as they are, numbers as written.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scalar {
        Text(String),
        Int(i64),
        Float(f64),
    }

    impl Scalar {
        fn text(self) -> String {
            match self {
                Scalar::Text(s) => s,
                Scalar::Int(i) => i.to_string(),
                Scalar::Float(f) => f.to_string(),
            }
        }
    }

    /// `duration = "1500ms"` or `duration = 2` (seconds).
    pub fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text = Scalar::deserialize(d)?.text();
        super::duration("", &text).map(Some).map_err(serde::de::Error::custom)
    }

    /// `throttle = "33.6kbps"`, in bytes per second.
    pub fn bandwidth<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        let text = Scalar::deserialize(d)?.text();
        super::bandwidth("", &text).map(Some).map_err(serde::de::Error::custom)
    }

    /// `slow_share = "20%"` or `slow_share = 0.2`.
    pub fn share<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        let text = Scalar::deserialize(d)?.text();
        super::share("", &text).map(Some).map_err(serde::de::Error::custom)
    }

    /// `access_log = "a.log"` or `access_log = ["a.log", "a.log.1.gz"]`.
    pub fn paths<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<std::path::PathBuf>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(std::path::PathBuf),
            Many(Vec<std::path::PathBuf>),
        }
        Ok(match OneOrMany::deserialize(d)? {
            OneOrMany::One(p) => vec![p],
            OneOrMany::Many(v) => v,
        })
    }
}

/// serde's "unknown field `conections`, expected one of `path`, `connections`, ..." with the
/// nearest name first: "unknown field `conections`: did you mean `connections`?". Without a
/// near name, the names allowed, each once (`no-keepalive` and `no_keepalive` are one).
/// Any other message is returned as it is.
pub fn did_you_mean(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else { return message.to_string() };
    let Some((field, expected)) = rest.split_once('`') else { return message.to_string() };
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    if names.is_empty() {
        return message.to_string();
    }
    let fold = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    if let Some(name) = nearest(field, &names) {
        return format!("unknown field `{field}`: did you mean `{name}`?");
    }
    let mut once: Vec<&str> = Vec::new();
    for n in names {
        if !once.iter().any(|o| fold(o) == fold(n)) {
            once.push(n);
        }
    }
    format!("unknown field `{field}`: expected one of {}", once.join(", "))
}

/// The name of `names` nearest to `typed`, when one is near enough to be what was meant (an
/// edit for every three letters, at least one; case, `-` and `_` aside).
pub fn nearest<'a>(typed: &str, names: &[&'a str]) -> Option<&'a str> {
    let fold = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    names
        .iter()
        .map(|n| (edit_distance(&fold(typed), &fold(n)), *n))
        .filter(|(d, n)| *d <= (n.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Levenshtein's distance, with a swap of two neighbours as one edit (Damerau's).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_number_is_seconds_and_every_duration_is_bounded() {
        assert_eq!(duration("-d", "2").unwrap(), Duration::from_secs(2));
        assert_eq!(duration("-d", "1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(duration("-d", "250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(duration("-d", "2m").unwrap(), Duration::from_secs(120));
        let e = duration("-d", "soon").unwrap_err().0;
        assert!(e.starts_with("-d: bad duration \"soon\""), "{e}");
        assert!(duration("-d", "1e300").is_err());
        assert!(duration("-d", "100000000000000h").is_err());
        assert!(duration("-d", "-1").is_err());
        assert!(duration("-d", "NaN").is_err());
    }

    #[test]
    fn sizes_are_binary_and_bounded() {
        assert_eq!(size_kib("", "4GiB").unwrap(), 4 * 1024 * 1024);
        assert_eq!(size_kib("", "512M").unwrap(), 512 * 1024);
        assert_eq!(size_kib("", "1.5g").unwrap(), 1536 * 1024);
        assert_eq!(size_kib("", "8192B").unwrap(), 8);
        assert_eq!(size_kib("", "0").unwrap(), 0);
        assert_eq!(
            size_kib("--memory", "4").unwrap_err().0,
            "--memory: size \"4\" has no unit: give one, e.g. 4GiB or 4MiB"
        );
        assert!(size_kib("", "lots").is_err());
        assert!(size_kib("", "4XB").is_err());
        assert!(size_kib("", "9999999999T").is_err());
    }

    #[test]
    fn bandwidths_shares_and_headers() {
        assert_eq!(bandwidth("", "8kbps").unwrap(), 1000.0);
        assert_eq!(bandwidth("", "1KiB/s").unwrap(), 1024.0);
        assert!(bandwidth("", "fast").is_err());
        assert_eq!(share("", "20%").unwrap(), 0.2);
        assert_eq!(share("", "0.5").unwrap(), 0.5);
        assert!(share("", "120%").is_err());
        assert_eq!(header("X-A:  b ").unwrap(), ("X-A".to_string(), "b".to_string()));
        assert!(header("NoColon").is_err());
        assert!(header("X: a\r\nInjected: 1").is_err());
        assert!(header_value("-T", "text/plain\r\nX: 1").is_err());
        assert_eq!(setting("workers = 4").unwrap(), ("workers".to_string(), "4".to_string()));
        assert!(setting("=4").is_err());
    }

    #[test]
    fn an_unknown_field_names_the_nearest() {
        let serde = "unknown field `conections`, expected one of `path`, `connections`, `no-keepalive`, `no_keepalive`";
        assert_eq!(super::did_you_mean(serde), "unknown field `conections`: did you mean `connections`?");
        assert_eq!(
            super::did_you_mean("unknown field `budgett`, expected one of `target`, `knobs`, `budget`"),
            "unknown field `budgett`: did you mean `budget`?"
        );
        assert_eq!(
            super::did_you_mean("unknown field `zzz`, expected one of `path`, `no-keepalive`, `no_keepalive`"),
            "unknown field `zzz`: expected one of path, no-keepalive"
        );
        assert_eq!(super::did_you_mean("invalid type: string"), "invalid type: string");
    }
}
