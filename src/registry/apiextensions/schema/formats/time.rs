//! The date, date-time and duration formats, as Go's time package and strfmt parse them.

use super::DURATION_PART;

/// Go's `time.Parse("2006-01-02", s)`: four-digit year, a month and a day that exists.
pub(super) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// strfmt.IsDateTime: the text lowercased and split at `t`; the first part a date, the second
/// `hh:mm:ss[<any>digits](z|±hh:mm)` with hours to 23 and minutes and seconds to 59. Done
/// without lowercasing a copy: `T` splits like `t`, `Z` ends like `z`.
pub(super) fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let mut parts = s.split(['t', 'T']);
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    is_date(date) && is_time_of_date_time(time)
}

fn is_time_of_date_time(t: &str) -> bool {
    let b = t.as_bytes();
    let two = |i: usize| b.len() > i + 1 && b[i].is_ascii_digit() && b[i + 1].is_ascii_digit();
    if !(two(0) && b.get(2) == Some(&b':') && two(3) && b.get(5) == Some(&b':') && two(6)) {
        return false;
    }
    if &t[0..2] > "23" || &t[3..5] > "59" || &t[6..8] > "59" {
        return false;
    }
    let rest = &t[8..];
    // `(.[0-9]+)?`: any one character, then digits.
    let fraction_ok = |f: &str| {
        let mut chars = f.chars();
        f.is_empty()
            || (chars.next().is_some_and(|c| c != '\n')
                && !chars.as_str().is_empty()
                && chars.as_str().bytes().all(|b| b.is_ascii_digit()))
    };
    if let Some(f) = rest.strip_suffix(['z', 'Z']) {
        if fraction_ok(f) {
            return true;
        }
    }
    let z = rest.as_bytes();
    if z.len() >= 6 {
        let tail = &z[z.len() - 6..];
        let offset = matches!(tail[0], b'+' | b'-')
            && tail[1].is_ascii_digit()
            && tail[2].is_ascii_digit()
            && tail[3] == b':'
            && tail[4].is_ascii_digit()
            && tail[5].is_ascii_digit();
        if offset && rest.is_char_boundary(rest.len() - 6) && fraction_ok(&rest[..rest.len() - 6]) {
            return true;
        }
    }
    false
}

/// strfmt.ParseDuration succeeds: Go's time.ParseDuration, or numbers with unit words.
pub(super) fn is_duration(s: &str) -> bool {
    if go_duration_nanos(s).is_some() {
        return true;
    }
    super::super::probe::allocates();
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    let Some(part) = DURATION_PART.as_ref() else {
        return false;
    };
    for m in part.captures_iter(s) {
        // strconv.Atoi fails on overflow, and that fails the whole parse.
        if m[2].parse::<i64>().is_err() {
            return false;
        }
        let unit = m[3].to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || v.eq_ignore_ascii_case(&unit) {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// Go's time.ParseDuration of `s` (`[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, known units, within
/// int64 nanoseconds), in nanoseconds (as near as a float64 sum of the parts gets).
pub(crate) fn go_duration_nanos(s: &str) -> Option<i64> {
    let negative = s.starts_with('-');
    let mut rest = s.strip_prefix(['-', '+']).unwrap_or(s);
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(a) => {
                let n = a.bytes().take_while(u8::is_ascii_digit).count();
                a.split_at(n)
            }
            None => ("", after),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let unit_len = after
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(after.len(), |(i, _)| i);
        let (unit, next) = after.split_at(unit_len);
        let scale: f64 = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        let whole: f64 = if int.is_empty() {
            0.0
        } else {
            int.parse().unwrap_or(f64::INFINITY)
        };
        let fraction = frac
            .bytes()
            .rev()
            .fold(0.0, |acc, d| (acc + f64::from(d - b'0')) / 10.0);
        let value = whole + fraction;
        total += value * scale;
        if total > 9.223_372_036_854_775e18 {
            return None;
        }
        rest = next;
    }
    // Within i64 (checked above); the cast rounds toward zero.
    let nanos = total as i64;
    Some(if negative { -nanos } else { nanos })
}
