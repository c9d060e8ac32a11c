//! Unit tests of `budget`.

use super::*;

#[test]
fn grpc_arithmetic_matches_the_spec() {
    // maxTokens 10, ratio 0.1: failures 10→9..→6 admit, 5 does not.
    let b = RetryBudget::builder()
        .grpc(10.0, 0.1)
        .spread(0.0)
        .build()
        .unwrap();
    let admitted: Vec<bool> = (0..6)
        .map(|_| b.try_retry(RetryCause::Error, 0.0).is_ok())
        .collect();
    assert_eq!(admitted, [true, true, true, true, false, false]);
    assert_eq!(b.tokens(), 4.0);
    for _ in 0..10 {
        b.record_success(None);
    }
    assert_eq!(b.tokens(), 5.0); // ten successes at 0.1 refund one token, exactly
    assert!(b.try_retry(RetryCause::Error, 0.0).is_err()); // 4 ≤ 5
    for _ in 0..1000 {
        b.record_success(None);
    }
    assert_eq!(b.tokens(), 10.0);
}

#[test]
fn aws_arithmetic_matches_the_sdks() {
    let b = RetryBudget::builder()
        .aws()
        .max_tokens(20.0)
        .spread(0.0)
        .build()
        .unwrap();
    let t = b.try_retry(RetryCause::Timeout, 0.0).unwrap();
    assert_eq!(t.tokens(), 10.0);
    let e = b.try_retry(RetryCause::Error, 0.0).unwrap();
    assert_eq!(e.tokens(), 5.0);
    assert_eq!(b.tokens(), 5.0);
    assert_eq!(b.try_retry(RetryCause::Timeout, 0.0), Err(Denied)); // 5 < 10
    assert_eq!(
        b.tokens(),
        5.0,
        "a denial charges nothing without a failure cost"
    );
    assert!(b.try_retry(RetryCause::Error, 0.0).is_ok()); // exactly 5 covers 5
    assert_eq!(b.tokens(), 0.0);
    assert_eq!(b.try_retry(RetryCause::Error, 0.0), Err(Denied));
    b.record_success(Some(e));
    assert_eq!(b.tokens(), 5.0);
    b.record_success(None);
    assert_eq!(b.tokens(), 6.0);
}

#[test]
fn spread_never_admits_below_the_plain_threshold() {
    for level in [0.0, 0.25, 0.5, 0.99, 1.0, f64::NAN, -3.0, 7.0] {
        let b = RetryBudget::builder()
            .grpc(10.0, 0.1)
            .spread(2.0)
            .build()
            .unwrap();
        let mut last_admitted_level = None;
        while b.try_retry(RetryCause::Error, level).is_ok() {
            last_admitted_level = Some(b.tokens());
        }
        let floor = 5.0
            + 2.0
                * if level.is_nan() {
                    0.0
                } else {
                    level.clamp(0.0, 1.0)
                };
        let l = last_admitted_level.unwrap_or(10.0);
        assert!(l > 5.0, "level {level}: admitted at {l}");
        assert!(l > floor, "level {level}: admitted at {l} ≤ {floor}");
    }
}

#[test]
fn higher_levels_give_up_earlier() {
    // Each call's threshold is ordered by its level: calls drop out one by one.
    let give_up_at = |level: f64| {
        let b = RetryBudget::builder()
            .grpc(100.0, 0.1)
            .spread(40.0)
            .build()
            .unwrap();
        let mut n = 0;
        while b.try_retry(RetryCause::Error, level).is_ok() {
            n += 1;
        }
        n
    };
    let counts: Vec<u32> = [0.0, 0.25, 0.5, 0.75, 0.999]
        .iter()
        .map(|&l| give_up_at(l))
        .collect();
    assert!(counts.windows(2).all(|w| w[0] > w[1]), "{counts:?}");
    assert_eq!(counts[0], 49);
}

#[test]
fn invalid_knobs_are_named() {
    let b = || RetryBudget::builder();
    assert_eq!(
        b().max_tokens(0.0).build().unwrap_err().field(),
        "max_tokens"
    );
    assert_eq!(
        b().max_tokens(2e12).build().unwrap_err().field(),
        "max_tokens"
    );
    assert_eq!(
        b().initial_tokens(11.0).build().unwrap_err().field(),
        "initial_tokens"
    );
    assert_eq!(
        b().threshold(10.0).build().unwrap_err().field(),
        "threshold"
    );
    assert_eq!(
        b().failure_cost(f64::INFINITY).build().unwrap_err().field(),
        "failure_cost"
    );
    assert_eq!(
        b().success_refund(-0.1).build().unwrap_err().field(),
        "success_refund"
    );
    assert_eq!(
        b().timeout_cost(f64::NAN).build().unwrap_err().field(),
        "timeout_cost"
    );
}
