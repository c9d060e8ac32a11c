//! The README's library quick start, run: the one-line form, then the policy
//! form (the README's own blocks are compiled as a doctest of the crate).
//! `cargo run -p herdless --example quick_start --features tokio`.

use std::time::Duration;

use herdless::prelude::*;

#[derive(Debug)]
enum DeviceError {
    Timeout,
    Busy { retry_after: Duration },
    Unauthorized,
}

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for DeviceError {}

/// A device that times out, is busy, then answers (and would refuse a 9th call).
fn scan(calls: &mut u32) -> Result<u32, DeviceError> {
    *calls += 1;
    match *calls {
        1 => Err(DeviceError::Timeout),
        2 => Err(DeviceError::Busy {
            retry_after: Duration::from_millis(5),
        }),
        9.. => Err(DeviceError::Unauthorized),
        _ => Ok(12),
    }
}

async fn fetch() -> std::io::Result<&'static str> {
    Ok("page")
}

fn read_config() -> std::io::Result<String> {
    std::fs::read_to_string("Cargo.toml")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One line: the classifier is picked by the error's type.
    let config = (|| read_config()).retry(Policy::default())?; // blocking
    let page = fetch.retry(Policy::default()).await?; // async
    println!("{} bytes of config, {page}", config.len());

    // Your own error type, bounds, a task id and a shared budget.
    let retry = Retry::builder()
        .policy(
            Policy::builder()
                .base(Duration::from_millis(10))
                .max_attempts(4)
                .build()?,
        )
        .classify(|e| match e {
            DeviceError::Timeout => Classification::retryable(),
            DeviceError::Busy { retry_after } => Classification::retry_after(*retry_after),
            DeviceError::Unauthorized => Classification::terminal(),
        })
        .task_id("capture-0042")
        .budget(RetryBudget::aws())
        .build();
    let mut calls = 0;
    let pages = retry.call(|_attempt| scan(&mut calls))?;
    println!("{pages} pages after {calls} calls");
    Ok(())
}
