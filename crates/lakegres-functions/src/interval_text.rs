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
}
