//! Access-log formats: Apache's `LogFormat` strings (`%h %l %u %t "%r" %>s %b`) and nginx's
//! `log_format` strings (`$remote_addr - $remote_user [$time_local] "$request" ...`), read into
//! a list of literals and fields, and one line matched against it. Only the fields a replay
//! needs are interpreted (request, method, path, query, status, time); every other field is
//! skipped. Hand-written: a format is a sequence of literal separators, so matching is a left
//! to right scan; a regex engine would add a dependency for no gain.

use crate::input::InputError;

/// What a field of a line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// "GET /a?b=1 HTTP/1.1" (%r, $request).
    Request,
    /// "GET" (%m, $request_method).
    Method,
    /// "/a?b=1" (%{...}, $request_uri).
    Target,
    /// "/a", without the query (%U, $uri).
    Path,
    /// "b=1" ($args, $query_string).
    Query,
    /// "?b=1" or "" (%q).
    QueryWithMark,
    /// "200" (%s, %>s, $status).
    Status,
    Time(TimeField),
    /// Anything else: skipped.
    Other,
}

/// The time forms the formats write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeField {
    /// "[10/Oct/2000:13:55:36 -0700]", brackets included (Apache's %t).
    ClfBracketed,
    /// "10/Oct/2000:13:55:36 -0700" (nginx's $time_local, inside the format's brackets).
    Clf,
    /// "2000-10-10T13:55:36-07:00" ($time_iso8601).
    Iso8601,
    /// Seconds since the epoch, with a fraction or not ($msec, %{sec}t).
    EpochSeconds,
    /// %{msec}t.
    EpochMillis,
    /// %{usec}t.
    EpochMicros,
    /// %{msec_frac}t: the milliseconds of a second another field gives.
    FracMillis,
    /// %{usec_frac}t.
    FracMicros,
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Literal(String),
    Field(Field),
}

/// A parsed format.
#[derive(Debug, Clone, PartialEq)]
pub struct LogFormat {
    /// As given ("combined" or the format string), for the report.
    pub name: String,
    pieces: Vec<Piece>,
}

/// What one line says about its request. Borrowed from the line.
#[derive(Debug, Default, PartialEq)]
pub struct Entry<'a> {
    pub method: Option<&'a str>,
    /// Path and query, as requested.
    pub target: Option<std::borrow::Cow<'a, str>>,
    pub status: Option<u16>,
    /// Seconds since the epoch.
    pub time: Option<f64>,
    /// Whether `time` is to the whole second only (Common Log Format, ISO 8601 without a
    /// fraction): arrivals within a second are then not known.
    pub whole_second: bool,
}

/// Apache's Common Log Format. nginx's `combined` and `common` write the same fields; a
/// combined line has more after them, which matching ignores, so this reads both.
const COMMON: &str = "%h %l %u %t \"%r\" %>s %b";
/// Apache's vhost_combined: the virtual host and port first.
const VHOST_COMBINED: &str = "%v:%p %h %l %u %t \"%r\" %>s %O";

/// The longest format string taken.
const MAX_FORMAT: usize = 4096;

impl LogFormat {
    /// "combined", "common", "vhost_combined", or an Apache or nginx format string.
    pub fn parse(text: &str) -> Result<LogFormat, InputError> {
        let bad = |why: String| InputError(format!("--log-format: {why}"));
        if text.len() > MAX_FORMAT {
            return Err(bad(format!("{} bytes, at most {MAX_FORMAT}", text.len())));
        }
        let name = text.to_string();
        let spec = match text {
            "combined" | "common" | "" => COMMON,
            "vhost_combined" => VHOST_COMBINED,
            other => other,
        };
        // Copied from a configuration file, a format has its quotes escaped.
        let spec = spec.replace("\\\"", "\"");
        let pieces =
            if spec.contains('%') && !spec.contains('$') { apache(&spec) } else { nginx(&spec) }.map_err(bad)?;
        let fields: Vec<Field> = pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Field(f) => Some(*f),
                Piece::Literal(_) => None,
            })
            .collect();
        let has = |f: Field| fields.contains(&f);
        if !(has(Field::Request) || has(Field::Target) || has(Field::Path)) {
            return Err(bad(format!(
                "{text:?} has no request line (%r, $request) and no path (%U, $uri, $request_uri): nothing to replay"
            )));
        }
        for pair in pieces.windows(2) {
            if let [Piece::Field(a), Piece::Field(b)] = pair
                && !(*a == Field::Path && matches!(b, Field::QueryWithMark | Field::Query))
            {
                return Err(bad(format!(
                    "{text:?}: two fields with nothing between them ({a:?} then {b:?}): a line could not be split"
                )));
            }
        }
        Ok(LogFormat { name, pieces })
    }

    /// Whether lines carry a time (needed for the log's rate and arrivals).
    pub fn has_time(&self) -> bool {
        self.pieces.iter().any(|p| {
            matches!(p, Piece::Field(Field::Time(t)) if !matches!(t, TimeField::FracMillis | TimeField::FracMicros))
        })
    }

    /// Reads one line; None when it does not match the format (malformed).
    pub fn read<'a>(&self, line: &'a str) -> Option<Entry<'a>> {
        let mut rest = line;
        let mut entry = Entry::default();
        let mut path: Option<&str> = None;
        let mut query: Option<&str> = None;
        let mut fraction = 0.0;
        for (i, piece) in self.pieces.iter().enumerate() {
            match piece {
                Piece::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Piece::Field(field) => {
                    let value;
                    (value, rest) = split_field(*field, rest, self.pieces.get(i + 1), i > 0 && self.quoted(i))?;
                    match field {
                        Field::Request => {
                            // "-" or a client's garbage: a line, not a request.
                            let mut words = value.split(' ');
                            entry.method = words.next();
                            entry.target = words.next().map(Into::into);
                        }
                        Field::Method => entry.method = Some(value),
                        Field::Target => entry.target = Some(value.into()),
                        Field::Path => path = Some(value),
                        Field::Query => query = Some(value).filter(|q| !q.is_empty() && *q != "-"),
                        Field::QueryWithMark => query = value.strip_prefix('?'),
                        Field::Status => entry.status = value.parse().ok(),
                        Field::Time(TimeField::FracMillis) => fraction = value.parse::<f64>().ok()? / 1e3,
                        Field::Time(TimeField::FracMicros) => fraction = value.parse::<f64>().ok()? / 1e6,
                        Field::Time(t) => {
                            let (time, whole) = parse_time(*t, value)?;
                            entry.time = Some(time);
                            entry.whole_second = whole;
                        }
                        Field::Other => {}
                    }
                }
            }
        }
        if let Some(t) = entry.time.as_mut()
            && fraction > 0.0
        {
            *t += fraction;
            entry.whole_second = false;
        }
        if entry.target.is_none()
            && let Some(p) = path
        {
            entry.target = Some(match query {
                Some(q) => format!("{p}?{q}").into(),
                None => p.into(),
            });
        }
        Some(entry)
    }

    /// Whether the field at `i` sits between double quotes (its value may hold escaped ones).
    fn quoted(&self, i: usize) -> bool {
        matches!(&self.pieces[i - 1], Piece::Literal(l) if l.ends_with('"'))
    }
}

/// The field's value at the start of `rest`, and what follows it.
fn split_field<'a>(field: Field, rest: &'a str, next: Option<&Piece>, quoted: bool) -> Option<(&'a str, &'a str)> {
    if field == Field::Time(TimeField::ClfBracketed) {
        let end = rest.strip_prefix('[')?.find(']')? + 2;
        return Some(rest.split_at(end));
    }
    match next {
        None => Some((rest, "")),
        Some(Piece::Literal(l)) => {
            // A request line has spaces of its own: look for the separator after its protocol.
            let mut from = match field {
                Field::Request => rest.find(" HTTP/").map_or(0, |at| at + 1),
                _ => 0,
            };
            loop {
                let at = from + rest[from..].find(l.as_str())?;
                // Inside quotes, \" is part of the value (Apache escapes quotes so).
                if quoted && l.starts_with('"') && rest[..at].ends_with('\\') && !rest[..at].ends_with("\\\\") {
                    from = at + 1;
                    continue;
                }
                return Some(rest.split_at(at));
            }
        }
        // A path straight before its query (%U%q): the path ends at the '?'.
        Some(Piece::Field(_)) => Some(rest.split_at(rest.find('?').unwrap_or(rest.len()))),
    }
}

/// The pieces of an Apache format string.
fn apache(spec: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut chars = spec.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            literal.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            literal.push('%');
            continue;
        }
        // %[<>][!][codes][{arg}]letter
        while chars.peek().is_some_and(|c| matches!(c, '<' | '>' | '!' | ',' | '0'..='9')) {
            chars.next();
        }
        let mut arg = None;
        if chars.peek() == Some(&'{') {
            chars.next();
            let a: String = chars.by_ref().take_while(|&c| c != '}').collect();
            arg = Some(a);
        }
        let letter = chars.next().ok_or_else(|| format!("{spec:?} ends inside a % directive"))?;
        let field = match letter {
            'r' => Field::Request,
            'm' => Field::Method,
            'U' => Field::Path,
            'q' => Field::QueryWithMark,
            's' => Field::Status,
            't' => match arg.as_deref().map(|a| a.trim_start_matches("begin:").trim_start_matches("end:")) {
                None | Some("") => Field::Time(TimeField::ClfBracketed),
                Some("sec") => Field::Time(TimeField::EpochSeconds),
                Some("msec") => Field::Time(TimeField::EpochMillis),
                Some("usec") => Field::Time(TimeField::EpochMicros),
                Some("msec_frac") => Field::Time(TimeField::FracMillis),
                Some("usec_frac") => Field::Time(TimeField::FracMicros),
                // A strftime format: read as text, not as a time.
                Some(_) => Field::Other,
            },
            c if c.is_ascii_alphabetic() => Field::Other,
            c => return Err(format!("{spec:?}: unknown directive %{c}")),
        };
        push(&mut pieces, &mut literal, field);
    }
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

/// The pieces of an nginx format string.
fn nginx(spec: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = spec;
    while let Some(at) = rest.find('$') {
        literal.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        let name = if let Some(braced) = rest.strip_prefix('{') {
            let end = braced.find('}').ok_or_else(|| format!("{spec:?}: ${{ without }}"))?;
            rest = &braced[end + 1..];
            &braced[..end]
        } else {
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let name = &rest[..end];
            rest = &rest[end..];
            name
        };
        if name.is_empty() {
            literal.push('$');
            continue;
        }
        let field = match name {
            "request" => Field::Request,
            "request_method" => Field::Method,
            "request_uri" => Field::Target,
            "uri" | "document_uri" => Field::Path,
            "args" | "query_string" => Field::Query,
            "status" => Field::Status,
            "time_local" => Field::Time(TimeField::Clf),
            "time_iso8601" => Field::Time(TimeField::Iso8601),
            "msec" => Field::Time(TimeField::EpochSeconds),
            _ => Field::Other,
        };
        push(&mut pieces, &mut literal, field);
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

fn push(pieces: &mut Vec<Piece>, literal: &mut String, field: Field) {
    if !literal.is_empty() {
        pieces.push(Piece::Literal(std::mem::take(literal)));
    }
    pieces.push(Piece::Field(field));
}

/// Seconds since the epoch, and whether only to the whole second.
fn parse_time(kind: TimeField, text: &str) -> Option<(f64, bool)> {
    let number = |scale: f64| text.parse::<f64>().ok().filter(|t| t.is_finite() && *t >= 0.0).map(|t| t / scale);
    match kind {
        TimeField::ClfBracketed => clf(text.strip_prefix('[')?.strip_suffix(']')?).map(|t| (t, true)),
        TimeField::Clf => clf(text).map(|t| (t, true)),
        TimeField::Iso8601 => iso8601(text),
        TimeField::EpochSeconds => number(1.0).map(|t| (t, !text.contains('.'))),
        TimeField::EpochMillis => number(1e3).map(|t| (t, false)),
        TimeField::EpochMicros => number(1e6).map(|t| (t, false)),
        TimeField::FracMillis | TimeField::FracMicros => None,
    }
}

/// "10/Oct/2000:13:55:36 -0700".
fn clf(text: &str) -> Option<f64> {
    let (stamp, zone) = text.split_once(' ')?;
    let mut parts = stamp.splitn(3, '/');
    let day: u32 = parts.next()?.parse().ok()?;
    let month = month(parts.next()?)?;
    let (year, clock) = parts.next()?.split_once(':')?;
    let seconds = clock_seconds(clock, ':')?;
    let local = days_from_civil(year.parse().ok()?, month, day)? as f64 * 86400.0 + seconds;
    Some(local - zone_offset(zone)?)
}

/// "2000-10-10T13:55:36-07:00", "...Z", "...+0200", with a fraction of a second or not.
fn iso8601(text: &str) -> Option<(f64, bool)> {
    let (date, rest) = text.split_once('T')?;
    let mut d = date.splitn(3, '-');
    let (year, month, day) = (d.next()?.parse().ok()?, d.next()?.parse().ok()?, d.next()?.parse().ok()?);
    let zone_at = rest.find(['Z', '+', '-']).unwrap_or(rest.len());
    let (clock, zone) = rest.split_at(zone_at);
    let seconds = clock_seconds(clock, ':')?;
    let offset = match zone {
        "" | "Z" => 0.0,
        z => zone_offset(z)?,
    };
    let t = days_from_civil(year, month, day)? as f64 * 86400.0 + seconds - offset;
    Some((t, !clock.contains('.')))
}

/// "13:55:36" or "13:55:36.25" -> seconds into the day.
fn clock_seconds(text: &str, sep: char) -> Option<f64> {
    let mut p = text.splitn(3, sep);
    let h: u32 = p.next()?.parse().ok()?;
    let m: u32 = p.next()?.parse().ok()?;
    let s: f64 = p.next()?.parse().ok()?;
    (h < 24 && m < 60 && (0.0..61.0).contains(&s)).then(|| f64::from(h * 3600 + m * 60) + s)
}

/// "-0700", "+02:00" -> seconds east of UTC.
fn zone_offset(text: &str) -> Option<f64> {
    let sign = match text.as_bytes().first()? {
        b'+' => 1.0,
        b'-' => -1.0,
        _ => return None,
    };
    let digits: String = text[1..].chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m): (f64, f64) = (digits[..2].parse().ok()?, digits[2..].parse().ok()?);
    Some(sign * (h * 3600.0 + m * 60.0))
}

fn month(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    MONTHS.iter().position(|m| *m == name).map(|i| i as u32 + 1)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
fn days_from_civil(year: i64, month: u32, day: u32) -> Option<i64> {
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || !(1..=9999).contains(&year) {
        return None;
    }
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_and_combined_lines_read_alike() {
        let f = LogFormat::parse("combined").unwrap();
        let line = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?a=1 HTTP/1.0" 200 2326 "http://x/" "Mozilla/4.08 [en] (Win98; I ;Nav)""#;
        let e = f.read(line).unwrap();
        assert_eq!(e.method, Some("GET"));
        assert_eq!(e.target.as_deref(), Some("/apache_pb.gif?a=1"));
        assert_eq!(e.status, Some(200));
        // 2000-10-10T20:55:36Z
        assert_eq!(e.time, Some(971_211_336.0));
        assert!(e.whole_second);
        let common = r#"::1 - - [10/Oct/2000:13:55:36 +0000] "HEAD / HTTP/1.1" 304 -"#;
        let e = f.read(common).unwrap();
        assert_eq!((e.method, e.status), (Some("HEAD"), Some(304)));
        assert!(f.read("garbage").is_none());
        assert!(f.read(r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "\x16\x03\x01" 400 150"#).unwrap().target.is_none());
    }

    #[test]
    fn nginx_and_apache_strings_with_sub_second_times() {
        let f =
            LogFormat::parse(r#"$remote_addr [$time_iso8601] "$request_method $request_uri" $status $msec"#).unwrap();
        let e = f.read(r#"10.0.0.1 [2026-11-20T10:00:00+01:00] "POST /a?x" 201 1763632800.125"#).unwrap();
        assert_eq!(e.method, Some("POST"));
        assert_eq!(e.target.as_deref(), Some("/a?x"));
        // $msec is read last, so it is the time.
        assert_eq!(e.time, Some(1_763_632_800.125));
        assert!(!e.whole_second);
        let a = LogFormat::parse(r#"%h %{msec}t \"%m %U%q %H\" %>s"#).unwrap();
        let e = a.read(r#"h 1763632800125 "GET /p?q=1 HTTP/1.1" 200"#).unwrap();
        assert_eq!(e.target.as_deref(), Some("/p?q=1"));
        assert_eq!(e.time, Some(1_763_632_800.125));
        let iso = LogFormat::parse("$time_iso8601 $request").unwrap();
        assert_eq!(iso.read("2026-11-20T09:00:00Z GET / HTTP/1.1").unwrap().time, Some(1_795_165_200.0));
    }

    #[test]
    fn escaped_quotes_stay_in_their_field() {
        let f = LogFormat::parse("%h \"%r\" %>s \"%{User-Agent}i\"").unwrap();
        let e = f.read(r#"h "GET /a\"b HTTP/1.1" 200 "x""#).unwrap();
        assert_eq!(e.target.as_deref(), Some(r#"/a\"b"#));
        assert_eq!(e.status, Some(200));
    }

    #[test]
    fn formats_without_a_request_or_with_fused_fields_are_refused() {
        for bad in ["%h %>s", "$remote_addr$status", "%h %{x"] {
            assert!(LogFormat::parse(bad).is_err(), "{bad}");
        }
        assert!(!LogFormat::parse("%h \"%r\"").unwrap().has_time());
    }
}
