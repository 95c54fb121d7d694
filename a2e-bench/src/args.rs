//! The flags and environment variables a benchmark reads: `--name VALUE`
//! pairs anywhere on its command line, `BENCH_*` variables.

use std::str::FromStr;

/// The value after the flag `name` in `args`, parsed; `None` when the flag
/// is missing, has no value, or the value does not parse.
pub fn flag<T: FromStr>(args: &[String], name: &str) -> Option<T> {
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1)?.parse().ok()
}

/// Whether the flag `name` is in `args`.
pub fn has(args: &[String], name: &str) -> bool {
    args.iter().any(|a| a == name)
}

/// The environment variable `name`, parsed.
pub fn env<T: FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_their_values() {
        let args: Vec<String> = ["bench", "--calls", "500", "--events", "--nodes"]
            .map(String::from)
            .into();
        assert_eq!(flag::<usize>(&args, "--calls"), Some(500));
        assert_eq!(flag::<usize>(&args, "--nodes"), None);
        assert_eq!(flag::<usize>(&args, "--events"), None);
        assert!(has(&args, "--events") && !has(&args, "--plain"));
    }
}
