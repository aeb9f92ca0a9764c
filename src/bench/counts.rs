//! Sizes as the command line writes them: `2^A..2^B` (every power of two from 2^A to 2^B),
//! `2^A`, or plain numbers, comma-separated (`1000,2^12,2^14..2^16`).

use std::ops::RangeInclusive;

/// A size list that does not parse, naming the option and the part that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option}: `{text}`: {reason}")]
pub struct CountsError {
    /// The option, e.g. `--particles`.
    pub option: String,
    /// The part of the list at fault.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses a comma-separated list of sizes: `2^A..2^B` (every power of two between, both
/// included), `2^A` or a plain number. Every size must lie in `2^lo..=2^hi` for
/// `exponents = lo..=hi` (`hi` at most 63); the sizes come back in the order written.
pub fn parse_counts(
    option: &str,
    text: &str,
    exponents: RangeInclusive<u32>,
) -> Result<Vec<u64>, CountsError> {
    let (lo, hi) = (*exponents.start(), (*exponents.end()).min(63));
    let fail = |part: &str, reason: String| CountsError {
        option: option.to_string(),
        text: part.to_string(),
        reason,
    };
    let power = |part: &str| -> Result<u32, CountsError> {
        let e = part
            .trim()
            .strip_prefix("2^")
            .ok_or_else(|| fail(part, "not a power of two written 2^N".into()))?;
        let e: u32 = e
            .trim()
            .parse()
            .map_err(|_| fail(part, "the exponent is not a whole number".into()))?;
        if !(lo..=hi).contains(&e) {
            return Err(fail(part, format!("2^{e} is outside 2^{lo}..2^{hi}")));
        }
        Ok(e)
    };
    let mut counts = Vec::new();
    for part in text.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(fail(text, "an empty item in the list".into()));
        }
        if let Some((a, b)) = part.split_once("..") {
            let (a, b) = (power(a)?, power(b)?);
            if a > b {
                return Err(fail(
                    part,
                    "an empty range (the first bound is larger)".into(),
                ));
            }
            counts.extend((a..=b).map(|e| 1u64 << e));
        } else if part.starts_with("2^") {
            counts.push(1u64 << power(part)?);
        } else {
            let n: u64 = part.parse().map_err(|_| {
                fail(
                    part,
                    "not a number, 2^N or 2^A..2^B (e.g. 1000,2^12..2^16)".into(),
                )
            })?;
            if n < 1u64 << lo || n > 1u64 << hi {
                return Err(fail(part, format!("outside 2^{lo}..2^{hi}")));
            }
            counts.push(n);
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_powers_and_plain_numbers() {
        assert_eq!(
            parse_counts("--particles", "2^10..2^13", 0..=62).unwrap(),
            vec![1024, 2048, 4096, 8192]
        );
        assert_eq!(
            parse_counts("--particles", "1000, 2^12,2^3..2^3", 0..=62).unwrap(),
            vec![1000, 4096, 8]
        );
        assert_eq!(
            parse_counts("--particles", "2^40", 0..=62).unwrap(),
            vec![1_099_511_627_776]
        );
        assert_eq!(parse_counts("--tets", "2^6", 6..=26).unwrap(), vec![64]);
    }

    #[test]
    fn bad_lists_say_which_part_and_why() {
        let err = |t: &str| parse_counts("--tets", t, 6..=26).unwrap_err().to_string();
        assert!(err("2^5").contains("outside 2^6..2^26"), "{}", err("2^5"));
        assert!(err("2^27..2^28").contains("`2^27`"));
        assert!(err("2^9..2^8").contains("empty range"));
        assert!(err("3^4").contains("not a number"));
        assert!(err("2^x").contains("not a whole number"));
        assert!(err("64,,128").contains("empty item"));
        assert!(err("").contains("empty item"));
        assert!(err("63").contains("outside"));
        assert!(err("4^2..2^8").contains("not a power of two"));
        assert!(
            err("2^30").starts_with("--tets: `2^30`: "),
            "{}",
            err("2^30")
        );
    }
}
