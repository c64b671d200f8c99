//! Statistics shared by the tuner, its evidence and the history commands: one place, so each
//! figure means the same wherever it is printed.

/// The middle value (the mean of the two middle ones for an even count); NaN when empty.
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 }
}

/// max - min; 0 when empty.
pub fn spread(v: &[f64]) -> f64 {
    let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    if v.is_empty() { 0.0 } else { max - min }
}

/// The arithmetic mean; NaN when empty.
pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The sample standard deviation (n - 1); 0 for fewer than two values.
pub fn stdev(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

/// The standard normal distribution's quantile (Acklam's rational approximation, relative
/// error under 1.2e-9: far below any noise it is compared with).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Student's t distribution's quantile with `df` degrees of freedom: exact for 1 and 2, the
/// Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5) above, within 1% of the tables from
/// 3 degrees of freedom at the 99.5th percentile and closer beyond.
pub fn t_quantile(p: f64, df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1 => (std::f64::consts::PI * (p - 0.5)).tan(),
        2 => (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt(),
        _ => {
            let z = normal_quantile(p);
            let n = df as f64;
            let z2 = z * z;
            let g1 = (z2 + 1.0) * z / 4.0;
            let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
            let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
            let g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0;
            z + g1 / n + g2 / n.powi(2) + g3 / n.powi(3) + g4 / n.powi(4)
        }
    }
}

/// A relative change with its confidence interval, in percent.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Effect {
    pub pct: f64,
    pub low_pct: f64,
    pub high_pct: f64,
}

impl Effect {
    /// "+5.1% [+3.2%, +7.0%]"; a bound past +999% reads "+999%+" (two rounds at 99% give
    /// bounds of many digits that say only "unknown").
    pub fn text(&self) -> String {
        let bound = |x: f64| if x > 999.0 { "+999%+".to_string() } else { format!("{x:+.1}%") };
        format!("{:+.1}% [{}, {}]", self.pct, bound(self.low_pct), bound(self.high_pct))
    }
}

/// The change from `before` to `after` measured in pairs (round i of each, taken side by side
/// so that drift between rounds cancels), with a two-sided interval at `level` (e.g. 0.99).
/// Computed on log ratios, so +10% and -9.1% are the same size of change; None with fewer
/// than two pairs or a value that is not positive.
///
/// `counts` (before's and after's, pair by pair) are how many events each value was
/// counted from: a value counted from n events is known to half an event at best, so the
/// spread of the log ratios is never taken below that rounding's (1/12 of an event squared
/// on each side). Without it, three windows of exactly 177 requests/s each would give an
/// interval of zero width.
pub fn paired_effect(before: &[f64], after: &[f64], counts: Option<(&[f64], &[f64])>, level: f64) -> Option<Effect> {
    let n = before.len().min(after.len());
    if n < 2 || before[..n].iter().chain(&after[..n]).any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let d: Vec<f64> = before[..n].iter().zip(&after[..n]).map(|(b, a)| (a / b).ln()).collect();
    let rounding = counts.map_or(0.0, |(cb, ca)| {
        let var = |c: f64| if c > 0.0 { 1.0 / (12.0 * c * c) } else { 0.0 };
        cb.iter().zip(ca).take(n).map(|(b, a)| var(*b) + var(*a)).sum::<f64>() / n as f64
    });
    let sd = stdev(&d).max(rounding.sqrt());
    let (m, se) = (mean(&d), sd / (n as f64).sqrt());
    let half = t_quantile(0.5 + level / 2.0, n - 1) * se;
    let pct = |x: f64| x.exp_m1() * 100.0;
    Some(Effect { pct: pct(m), low_pct: pct(m - half), high_pct: pct(m + half) })
}

/// Measurements of one run summarized: their mean, sample standard deviation and count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub mean: f64,
    pub sd: f64,
    pub n: usize,
}

impl Summary {
    pub fn of(v: &[f64]) -> Summary {
        Summary { mean: mean(v), sd: stdev(v), n: v.len() }
    }
}

/// The change of the mean from `before` to `after`, two runs measured apart (not in pairs),
/// with a two-sided interval at `level`: Welch's, on the log of the ratio of the means (the
/// delta method), so +10% and -9.1% are the same size of change. Each measurement is taken
/// as known to half a unit at best (a count's rounding: 1/12 squared), so runs of identical
/// seconds do not give an interval of zero width. None when either run has fewer than two
/// measurements, or a mean that is not positive.
pub fn unpaired_effect(before: Summary, after: Summary, level: f64) -> Option<Effect> {
    if before.n < 2 || after.n < 2 || !(before.mean > 0.0 && after.mean > 0.0) {
        return None;
    }
    // The variance of the log of each mean.
    let part = |s: Summary| s.sd.powi(2).max(1.0 / 12.0) / (s.n as f64 * s.mean.powi(2));
    let (vb, va) = (part(before), part(after));
    let df = (vb + va).powi(2) / (vb.powi(2) / (before.n - 1) as f64 + va.powi(2) / (after.n - 1) as f64);
    let half = t_quantile(0.5 + level / 2.0, (df.floor() as usize).max(1)) * (vb + va).sqrt();
    let m = (after.mean / before.mean).ln();
    let pct = |x: f64| x.exp_m1() * 100.0;
    Some(Effect { pct: pct(m), low_pct: pct(m - half), high_pct: pct(m + half) })
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_interval_of_two_rounds_reads_as_unknown_past_999_percent() {
        let e = super::Effect { pct: 14.9, low_pct: -100.0, high_pct: 43196067390667.0 };
        assert_eq!(e.text(), "+14.9% [-100.0%, +999%+]");
        assert_eq!(super::Effect { pct: 5.1, low_pct: 3.2, high_pct: 7.0 }.text(), "+5.1% [+3.2%, +7.0%]");
    }

    use super::*;

    #[test]
    fn quantiles_match_the_tables() {
        assert!((normal_quantile(0.975) - 1.959964).abs() < 1e-5);
        assert!((normal_quantile(0.005) + 2.575829).abs() < 1e-5);
        // Student's t at the 99.5th and 97.5th percentiles (standard tables).
        for (df, t995, t975) in [
            (1, 63.657, 12.706),
            (2, 9.925, 4.303),
            (3, 5.841, 3.182),
            (5, 4.032, 2.571),
            (10, 3.169, 2.228),
            (30, 2.750, 2.042),
        ] {
            let (a, b) = (t_quantile(0.995, df), t_quantile(0.975, df));
            assert!((a - t995).abs() / t995 < 0.01, "df {df}: {a} vs {t995}");
            assert!((b - t975).abs() / t975 < 0.01, "df {df}: {b} vs {t975}");
        }
    }

    #[test]
    fn a_paired_effect_cancels_drift_between_rounds() {
        // The machine slows down round by round; the change is +5% within every round.
        let before = [100.0, 90.0, 80.0, 70.0];
        let after: Vec<f64> = before.iter().map(|b| b * 1.05).collect();
        let e = paired_effect(&before, &after, None, 0.99).unwrap();
        assert!((e.pct - 5.0).abs() < 1e-9 && (e.low_pct - 5.0).abs() < 1e-6, "{e:?}");
        // Noise both ways: the interval spans zero.
        let e = paired_effect(&[100.0, 100.0, 100.0], &[103.0, 97.0, 100.0], None, 0.99).unwrap();
        assert!(e.low_pct < 0.0 && e.high_pct > 0.0, "{e:?}");
        assert_eq!(paired_effect(&[100.0], &[101.0], None, 0.99), None);
        // Whole requests per second from 1 s windows: identical rounds are not certainty.
        let counts = [177.0, 177.0, 177.0];
        let e = paired_effect(&counts, &[178.0; 3], Some((&counts, &[178.0; 3])), 0.99).unwrap();
        assert!(e.low_pct < 0.0 && e.high_pct > 1.0, "{e:?}");
    }

    #[test]
    fn medians_and_spreads() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(spread(&[3.0, 1.0, 2.0]), 2.0);
    }

    #[test]
    fn runs_measured_apart_have_a_welch_interval_and_one_second_none() {
        let before = super::Summary::of(&[1000.0, 1010.0, 990.0, 1005.0, 995.0]);
        let after = super::Summary::of(&[1100.0, 1110.0, 1090.0, 1105.0, 1095.0]);
        let e = super::unpaired_effect(before, after, 0.99).unwrap();
        assert!((e.pct - 10.0).abs() < 0.01, "{e:?}");
        assert!(e.low_pct > 7.0 && e.low_pct < 10.0 && e.high_pct > 10.0 && e.high_pct < 13.0, "{e:?}");
        let one = super::Summary::of(&[1000.0]);
        assert_eq!(super::unpaired_effect(one, after, 0.99), None);
    }
}
