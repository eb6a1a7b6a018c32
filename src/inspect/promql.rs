//! The two PromQL functions `kapi top` needs, on two reads of a series instead of a range:
//! `increase()` of a counter with its restart handling, and `histogram_quantile()` over the
//! increase of a histogram's buckets (prometheus/promql/quantile.go). Pure functions.

use super::scrape::Buckets;

/// The increase of a counter from `prev` to `cur`: a counter that went down was restarted,
/// so all of `cur` is new; one that was not there before started at zero.
pub(crate) fn increase(prev: Option<f64>, cur: f64) -> f64 {
    match prev {
        Some(p) if cur >= p => cur - p,
        _ => cur,
    }
}

/// The increase of every bucket of a histogram series; when any bucket went down, or the
/// buckets changed, the series was restarted and all of `cur` is new.
pub(crate) fn histogram_increase(prev: Option<&Buckets>, cur: &Buckets) -> Buckets {
    let Some(prev) = prev.filter(|p| p.len() == cur.len()) else {
        return cur.clone();
    };
    let restarted = prev
        .iter()
        .zip(cur)
        .any(|(p, c)| p.0.total_cmp(&c.0).is_ne() || c.1 < p.1);
    if restarted {
        return cur.clone();
    }
    prev.iter()
        .zip(cur)
        .map(|(p, c)| (c.0, c.1 - p.1))
        .collect()
}

/// The `q` quantile of cumulative `buckets` (sorted by bound, the last one `+Inf`), as
/// Prometheus' `histogram_quantile` (promql/quantile.go bucketQuantile) estimates it; `None`
/// without observations or without a `+Inf` bucket.
pub(crate) fn quantile(q: f64, buckets: &Buckets) -> Option<f64> {
    if !(0.0..=1.0).contains(&q) || buckets.len() < 2 {
        return None;
    }
    if buckets.last().map(|b| b.0) != Some(f64::INFINITY) {
        return None;
    }
    // Counts scraped while requests finish can be a little out of order; Prometheus makes
    // them monotonic the same way.
    let mut counts: Vec<f64> = Vec::with_capacity(buckets.len());
    for b in buckets {
        let max = counts.last().copied().unwrap_or(0.0).max(b.1);
        counts.push(max);
    }
    let observations = counts[counts.len() - 1];
    if observations <= 0.0 {
        return None;
    }
    let mut rank = q * observations;
    let last = buckets.len() - 1;
    let b = counts[..last]
        .iter()
        .position(|&c| c >= rank)
        .unwrap_or(last);
    if b == last {
        return Some(buckets[last - 1].0);
    }
    if b == 0 && buckets[0].0 <= 0.0 {
        return Some(buckets[0].0);
    }
    let end = buckets[b].0;
    let (start, mut count) = (if b > 0 { buckets[b - 1].0 } else { 0.0 }, counts[b]);
    if b > 0 {
        count -= counts[b - 1];
        rank -= counts[b - 1];
    }
    Some(start + (end - start) * (rank / count))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: f64 = f64::INFINITY;

    fn close(got: Option<f64>, want: f64) {
        let got = got.expect("a quantile");
        assert!((got - want).abs() < 1e-9, "got {got}, want {want}");
    }

    #[test]
    fn quantiles_interpolate_inside_the_bucket() {
        let b = vec![(0.005, 3.0), (0.025, 4.0), (INF, 4.0)];
        // rank 2 of 3 in [0, 0.005]
        close(quantile(0.5, &b), 0.005 * 2.0 / 3.0);
        // rank 3.96: 0.96 of the one observation in (0.005, 0.025]
        close(quantile(0.99, &b), 0.005 + 0.02 * 0.96);
        close(quantile(1.0, &b), 0.025);
        close(quantile(0.0, &b), 0.0);
        // Prometheus' own example: 100 observations spread evenly over four buckets.
        let even = vec![
            (0.25, 25.0),
            (0.5, 50.0),
            (0.75, 75.0),
            (1.0, 100.0),
            (INF, 100.0),
        ];
        close(quantile(0.5, &even), 0.5);
        close(quantile(0.9, &even), 0.9);
    }

    #[test]
    fn quantiles_at_the_edges() {
        // Beyond the last finite bound: that bound, as histogram_quantile answers.
        let slow = vec![(0.1, 0.0), (60.0, 1.0), (INF, 5.0)];
        close(quantile(0.5, &slow), 60.0);
        assert_eq!(quantile(0.5, &vec![(0.1, 0.0), (INF, 0.0)]), None);
        assert_eq!(
            quantile(0.5, &vec![(0.1, 1.0), (1.0, 2.0)]),
            None,
            "no +Inf"
        );
        assert_eq!(quantile(0.5, &vec![(INF, 3.0)]), None, "one bucket");
        assert_eq!(quantile(1.5, &vec![(0.1, 1.0), (INF, 1.0)]), None);
        // Counts out of order are made monotonic first.
        let torn = vec![(0.1, 4.0), (0.2, 3.0), (INF, 4.0)];
        close(quantile(0.5, &torn), 0.05);
    }

    #[test]
    fn counters_restart_and_appear() {
        assert_eq!(increase(Some(10.0), 15.0), 5.0);
        assert_eq!(
            increase(Some(100.0), 7.0),
            7.0,
            "restarted: all of it is new"
        );
        assert_eq!(increase(None, 4.0), 4.0, "a new series starts at zero");
        let prev = vec![(0.1, 5.0), (INF, 8.0)];
        assert_eq!(
            histogram_increase(Some(&prev), &vec![(0.1, 6.0), (INF, 10.0)]),
            vec![(0.1, 1.0), (INF, 2.0)]
        );
        let restarted = vec![(0.1, 1.0), (INF, 1.0)];
        assert_eq!(histogram_increase(Some(&prev), &restarted), restarted);
        let rebucketed = vec![(0.5, 9.0), (INF, 9.0)];
        assert_eq!(histogram_increase(Some(&prev), &rebucketed), rebucketed);
        assert_eq!(histogram_increase(None, &prev), prev);
    }
}
