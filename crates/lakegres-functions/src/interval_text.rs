//! Interval text as Spark reads it (`CAST('…' AS INTERVAL)` and
//! `INTERVAL '…'`), put in the form Arrow's interval parser takes: an
//! optional leading `interval` word, any blanks (tabs, several spaces)
//! between words, and a sign standing apart from its number (`'- 1 second'`,
//! `'- -1 second'`, `'+1 second'`).

/// `text` in Arrow's form, or `None` when it is not Spark's interval text.
/// The `interval` word may lead only a text naming its own units (not the
/// text of `INTERVAL '1' DAY`: `with_units` false).
pub(crate) fn normalized(text: &str, with_units: bool) -> Option<String> {
    let mut words = text.split_whitespace().peekable();
    if words
        .peek()
        .is_some_and(|w| w.eq_ignore_ascii_case("interval"))
    {
        if !with_units {
            return None;
        }
        words.next();
    }
    let mut out: Vec<String> = Vec::new();
    let mut negative = false;
    let mut signed = false;
    for word in words {
        if word == "-" || word == "+" {
            if signed {
                return None;
            }
            negative = word == "-";
            signed = true;
            continue;
        }
        let mut word = word;
        if signed || out.len().is_multiple_of(2) {
            // A number: one sign, apart from it (`- 1`) or on it (`-1`).
            let own = word.strip_prefix('-').or_else(|| word.strip_prefix('+'));
            if let Some(rest) = own {
                if signed {
                    return None;
                }
                negative = word.starts_with('-');
                word = rest;
            }
            if word.is_empty() || word.starts_with(['-', '+']) {
                return None;
            }
            out.push(format!("{}{word}", if negative { "-" } else { "" }));
            negative = false;
            signed = false;
        } else {
            out.push(word.to_string());
        }
    }
    if signed || out.is_empty() {
        return None;
    }
    Some(out.join(" "))
}

/// The fields of an ANSI range's text (`'-1 02:03:04'` of DAY TO SECOND)
/// from field `first` to `last` (0 YEAR … 5 SECOND): its sign and each
/// field's digits; `None` for another number of fields.
pub(crate) fn range_fields(text: &str, first: usize, last: usize) -> Option<(bool, Vec<&str>)> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let parts: Vec<&str> = digits.split([' ', ':', '-']).collect();
    let digits_only = |p: &&str| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit() || c == '.');
    (last >= first && parts.len() == last - first + 1 && parts.iter().all(digits_only))
        .then_some((negative, parts))
}

/// Fields from `first` (as [`range_fields`] gives them) as the text Arrow
/// reads: `3 years 1 months`.
pub(crate) fn named_fields(negative: bool, parts: &[&str], first: usize) -> String {
    const NAMES: [&str; 6] = ["years", "months", "days", "hours", "minutes", "seconds"];
    let sign = if negative { "-" } else { "" };
    parts
        .iter()
        .zip(NAMES.iter().skip(first))
        .map(|(n, name)| format!("{sign}{n} {name}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why Databricks refuses an interval literal of `normal` text (as
/// [`normalized`] gives it), naming its own units: a number without a unit
/// (`INTERVAL '1'`), or year-month units beside day-time ones (an ANSI
/// interval is one or the other).
pub(crate) fn refused(normal: &str) -> Option<&'static str> {
    let words: Vec<&str> = normal.split(' ').collect();
    let plain_number = |w: &str| w.parse::<f64>().is_ok();
    if !words.len().is_multiple_of(2) && words.last().is_some_and(|w| plain_number(w)) {
        return Some("a number without its unit");
    }
    let units = words
        .iter()
        .skip(1)
        .step_by(2)
        .map(|u| u.to_ascii_lowercase());
    let (mut year_month, mut day_time) = (false, false);
    for unit in units {
        let unit = unit.strip_suffix('s').unwrap_or(&unit).to_string();
        match unit.as_str() {
            "year" | "month" => year_month = true,
            "week" | "day" | "hour" | "minute" | "second" | "millisecond" | "microsecond" => {
                day_time = true
            }
            _ => {}
        }
    }
    (year_month && day_time).then_some("cannot mix year-month and day-time fields")
}

#[cfg(test)]
mod tests {
    use super::normalized;

    #[test]
    fn spark_forms() {
        assert_eq!(
            normalized("interval 3 month 1 hour", true).as_deref(),
            Some("3 month 1 hour")
        );
        assert_eq!(
            normalized("+     1 second", true).as_deref(),
            Some("1 second")
        );
        assert_eq!(
            normalized("-     1 second", true).as_deref(),
            Some("-1 second")
        );
        assert_eq!(normalized("- -1 second", true), None);
        assert_eq!(normalized("- +1 second", true), None);
        assert_eq!(
            normalized("\t interval 1\tday ", true).as_deref(),
            Some("1 day")
        );
        assert_eq!(normalized("-\t 1", true).as_deref(), Some("-1"));
        assert_eq!(normalized("-", true), None);
        assert_eq!(normalized("interval 1", false), None);
    }

    #[test]
    fn refused_literals() {
        use super::refused;
        assert!(refused("1").is_some());
        assert!(refused("1 day 1").is_some());
        assert!(refused("1 month 1 day").is_some());
        assert_eq!(refused("1 day 02:03:04"), None);
        assert_eq!(refused("2 years 3 months"), None);
    }
}
