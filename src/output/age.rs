//! Human-readable ages, ported from k8s.io/apimachinery `duration.HumanDuration` (what kubectl
//! prints in its AGE columns), plus the "in X" / "X ago" form used for expiry times.

use chrono::{DateTime, Utc};

/// Formats a duration the way kubectl does: `5s`, `3m2s`, `45m`, `4h5m`, `20h`, `3d4h`, `30d`,
/// `2y10d`, `9y`; `0s` for up to one second in the future, `<invalid>` beyond that.
pub(crate) fn human_duration(d: chrono::TimeDelta) -> String {
    // Go: int(d.Seconds()) truncates toward zero; integer division on nanoseconds does too.
    let nanos = d
        .num_nanoseconds()
        .unwrap_or(if d < chrono::TimeDelta::zero() {
            i64::MIN
        } else {
            i64::MAX
        });
    let seconds = nanos / 1_000_000_000;
    if seconds < -1 {
        return "<invalid>".to_string();
    } else if seconds < 0 {
        return "0s".to_string();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    } else if hours < 48 {
        return format!("{hours}h");
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{h}h", hours / 24);
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{dy}d", hours / 24 / 365);
    }
    format!("{}y", hours / 24 / 365)
}

/// Formats `at` relative to `now`: `in 58m` for the future, `3s ago` for the past,
/// `<none>` when absent. Within one second either way counts as `0s ago`.
pub(crate) fn relative_time(at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    let Some(at) = at else {
        return "<none>".to_string();
    };
    let delta = at - now;
    if delta.num_milliseconds() >= 1000 {
        format!("in {}", human_duration(delta))
    } else {
        format!("{} ago", human_duration(now - at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;

    fn secs(s: i64) -> TimeDelta {
        TimeDelta::seconds(s)
    }

    #[test]
    fn human_duration_matches_kubectl() {
        let cases: &[(TimeDelta, &str)] = &[
            (TimeDelta::milliseconds(-2500), "<invalid>"),
            (TimeDelta::milliseconds(-1999), "0s"),
            (TimeDelta::milliseconds(-1500), "0s"),
            (TimeDelta::milliseconds(999), "0s"),
            (secs(5), "5s"),
            (secs(119), "119s"),
            (secs(120), "2m"),
            (secs(182), "3m2s"),
            (secs(599), "9m59s"),
            (secs(600), "10m"),
            (secs(3 * 3600 - 1), "179m"),
            (secs(3 * 3600), "3h"),
            (secs(4 * 3600 + 5 * 60), "4h5m"),
            (secs(8 * 3600), "8h"),
            (secs(47 * 3600 + 59 * 60), "47h"),
            (secs(48 * 3600), "2d"),
            (secs(3 * 86400 + 4 * 3600), "3d4h"),
            (secs(8 * 86400), "8d"),
            (secs(729 * 86400), "729d"),
            (secs(730 * 86400), "2y"),
            (secs(740 * 86400), "2y10d"),
            (secs(8 * 365 * 86400), "8y"),
            (secs(20 * 365 * 86400), "20y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(*d), *want, "for {d:?}");
        }
    }

    #[test]
    fn relative_time_future_and_past() {
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").map(|t| t.to_utc());
        let now = now.unwrap();
        assert_eq!(relative_time(Some(now + secs(3500)), now), "in 58m");
        assert_eq!(relative_time(Some(now - secs(3)), now), "3s ago");
        assert_eq!(relative_time(Some(now), now), "0s ago");
        assert_eq!(relative_time(None, now), "<none>");
    }
}
