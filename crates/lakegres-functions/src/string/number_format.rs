//! Number format strings of `to_number`, `try_to_number` and `to_char`
//! (<https://docs.databricks.com/sql/language-manual/functions/to_number.html>,
//! <https://docs.databricks.com/sql/language-manual/functions/to_char.html>):
//! `[MI|S] [$] [0|9|G|,]… [.|D] [0|9]… [$] [PR|MI|S]`, any case.
//!
//! A run of digits in the format that starts with `0` before the decimal
//! point asks for exactly as many digits in the input; any other run for
//! at most as many. Runs separated by `,` must match the input's groups from
//! the right. The result of parsing is a DECIMAL whose precision is the
//! format's digits and whose scale its digits after the point.

/// One run of a digit group, left to right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// `0…`: exactly this many digits (before the decimal point).
    Exactly(usize),
    /// `9…` (or any run after the point): at most this many.
    AtMost(usize),
    /// `,` or `G`.
    Comma,
}

impl Run {
    fn width(self) -> usize {
        match self {
            Run::Exactly(n) | Run::AtMost(n) => n,
            Run::Comma => 0,
        }
    }
}

/// One element of a format.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Element {
    Digits(Vec<Run>),
    Point,
    Dollar,
    /// `S`: an optional `+` or `-`.
    Sign,
    /// `MI`: an optional `-`.
    Minus,
    /// `PR` (its opening half, placed first).
    Open,
    /// `PR` (its closing half).
    Close,
}

/// A checked number format.
#[derive(Debug, Clone)]
pub(crate) struct NumberFormat {
    text: String,
    elements: Vec<Element>,
    /// Digits in all.
    pub precision: u8,
    /// Digits after the point.
    pub scale: i8,
}

/// Why a format is refused.
pub(crate) type Invalid = String;

impl NumberFormat {
    /// Reads a format, checking it as Databricks does.
    pub fn parse(text: &str) -> Result<Self, Invalid> {
        if text.is_empty() {
            return Err("the format string is empty".into());
        }
        let upper: Vec<char> = text.to_uppercase().chars().collect();
        let mut flat: Vec<Element> = Vec::new();
        let mut runs: Vec<Run> = Vec::new();
        let mut after_point = false;
        let mut prs = 0;
        let mut i = 0;
        let flush = |runs: &mut Vec<Run>, flat: &mut Vec<Element>| {
            if !runs.is_empty() {
                flat.push(Element::Digits(std::mem::take(runs)));
            }
        };
        while i < upper.len() {
            let c = upper[i];
            match c {
                '0' | '9' => {
                    let start = i;
                    while i < upper.len() && matches!(upper[i], '0' | '9') {
                        i += 1;
                    }
                    let n = i - start;
                    runs.push(if c == '0' && !after_point {
                        Run::Exactly(n)
                    } else {
                        Run::AtMost(n)
                    });
                    continue;
                }
                ',' | 'G' => runs.push(Run::Comma),
                _ => {
                    flush(&mut runs, &mut flat);
                    match c {
                        '.' | 'D' => {
                            flat.push(Element::Point);
                            after_point = true;
                        }
                        '$' | 'L' => flat.push(Element::Dollar),
                        'S' => flat.push(Element::Sign),
                        'M' if upper.get(i + 1) == Some(&'I') => {
                            flat.push(Element::Minus);
                            i += 1;
                        }
                        'P' if upper.get(i + 1) == Some(&'R') => {
                            flat.push(Element::Close);
                            prs += 1;
                            i += 1;
                        }
                        other => {
                            return Err(format!("the character '{other}' is not allowed"));
                        }
                    }
                }
            }
            i += 1;
        }
        flush(&mut runs, &mut flat);
        if prs > 0 {
            flat.insert(0, Element::Open);
        }
        Self::check(&flat, prs)?;
        let digits = |elements: &[Element]| -> usize {
            elements
                .iter()
                .map(|e| match e {
                    Element::Digits(runs) => runs.iter().map(|r| r.width()).sum(),
                    _ => 0,
                })
                .sum()
        };
        let precision = digits(&flat);
        let scale = flat
            .iter()
            .position(|e| *e == Element::Point)
            .map(|p| digits(&flat[p..]))
            .unwrap_or(0);
        if precision > 38 {
            return Err(format!(
                "it has {precision} digits, more than the 38 a DECIMAL holds"
            ));
        }
        Ok(Self {
            text: text.to_string(),
            elements: flat,
            precision: precision as u8,
            scale: scale as i8,
        })
    }

    fn check(elements: &[Element], prs: usize) -> Result<(), Invalid> {
        if !elements.iter().any(|e| matches!(e, Element::Digits(_))) {
            return Err("it has no digits (0 or 9)".into());
        }
        for (i, e) in elements.iter().enumerate() {
            if let Element::Digits(runs) = e {
                let before_point = !elements[..i].contains(&Element::Point);
                let commas = runs.iter().filter(|r| **r == Run::Comma).count();
                if commas > 0 && !before_point {
                    return Err("thousands separators must come before the decimal point".into());
                }
                let bad = runs.first() == Some(&Run::Comma)
                    || runs.last() == Some(&Run::Comma)
                    || runs
                        .windows(2)
                        .any(|w| w[0] == Run::Comma && w[1] == Run::Comma);
                if bad {
                    return Err("a thousands separator needs a digit on either side".into());
                }
            }
        }
        for (token, name) in [
            (Element::Point, ". or D"),
            (Element::Sign, "S"),
            (Element::Minus, "MI"),
            (Element::Dollar, "$"),
        ] {
            if elements.iter().filter(|e| **e == token).count() > 1 {
                return Err(format!("'{name}' may appear only once"));
            }
        }
        if prs > 1 {
            return Err("'PR' may appear only once".into());
        }
        // The order: [PR<] [MI|S] [$] digits [.] [digits] [$] [PR|MI|S].
        let slots: [fn(&Element) -> bool; 8] = [
            |e| *e == Element::Open,
            |e| *e == Element::Minus || *e == Element::Sign,
            |e| *e == Element::Dollar,
            |e| matches!(e, Element::Digits(_)),
            |e| *e == Element::Point,
            |e| matches!(e, Element::Digits(_)),
            |e| *e == Element::Dollar,
            |e| *e == Element::Minus || *e == Element::Sign || *e == Element::Close,
        ];
        let mut at = 0;
        for slot in slots {
            if elements.get(at).is_some_and(slot) {
                at += 1;
            }
        }
        match elements.get(at) {
            None => Ok(()),
            Some(e) => Err(format!("'{}' is not allowed where it is", describe(e))),
        }
    }

    /// The format as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The unscaled value of `input` at [`Self::scale`], or `None` when
    /// it does not match the format.
    pub fn parse_number(&self, input: &str) -> Option<i128> {
        let chars: Vec<char> = input.trim().chars().collect();
        let mut at = 0;
        let mut negative = false;
        let (mut opened, mut closed) = (false, false);
        let mut after_point = false;
        let mut int_digits = String::new();
        let mut frac_digits = String::new();
        for element in &self.elements {
            let next = chars.get(at).copied();
            match element {
                Element::Digits(runs) => {
                    // The input's groups of digits, split at commas.
                    let mut groups = vec![0usize];
                    while let Some(&c) = chars.get(at) {
                        if c.is_ascii_digit() {
                            if let Some(last) = groups.last_mut() {
                                *last += 1;
                            }
                            if after_point {
                                frac_digits.push(c);
                            } else {
                                int_digits.push(c);
                            }
                        } else if c == ',' {
                            groups.push(0);
                        } else if !c.is_whitespace() {
                            break;
                        }
                        at += 1;
                    }
                    let expected: Vec<Run> =
                        runs.iter().copied().filter(|r| *r != Run::Comma).collect();
                    if groups.len() > expected.len() {
                        return None;
                    }
                    // Matched from the right: leading runs may be absent.
                    for (k, run) in expected.iter().rev().enumerate() {
                        let actual = groups.len().checked_sub(k + 1).map_or(0, |g| groups[g]);
                        match run {
                            Run::Exactly(n) if actual != *n => return None,
                            Run::AtMost(n) if actual > *n => return None,
                            _ => {}
                        }
                    }
                }
                Element::Point => {
                    if next == Some('.') {
                        after_point = true;
                        at += 1;
                    }
                }
                Element::Dollar => match next {
                    Some('$') => at += 1,
                    Some(_) => return None,
                    None => {}
                },
                Element::Sign => match next {
                    Some('+') => at += 1,
                    Some('-') => {
                        negative = !negative;
                        at += 1;
                    }
                    _ => {}
                },
                Element::Minus => {
                    if next == Some('-') {
                        negative = !negative;
                        at += 1;
                    }
                }
                Element::Open => {
                    if next == Some('<') {
                        opened = true;
                        at += 1;
                    }
                }
                Element::Close => {
                    if next == Some('>') {
                        if !opened {
                            return None;
                        }
                        closed = true;
                        negative = !negative;
                        at += 1;
                    }
                }
            }
        }
        if at < chars.len() || opened != closed || (int_digits.is_empty() && frac_digits.is_empty())
        {
            return None;
        }
        let scale = self.scale.max(0) as usize;
        if frac_digits.len() > scale {
            return None;
        }
        let mut unscaled: i128 = 0;
        let padded = frac_digits
            .chars()
            .chain(std::iter::repeat('0'))
            .take(scale);
        for c in int_digits.chars().chain(padded) {
            unscaled = unscaled
                .checked_mul(10)?
                .checked_add(c.to_digit(10)? as i128)?;
        }
        Some(if negative { -unscaled } else { unscaled })
    }

    /// The text of the decimal `unscaled` × 10^-`scale` in this format;
    /// digits the format has no room for show as `#`.
    pub fn format_number(&self, unscaled: i128, scale: i8) -> String {
        let negative = unscaled < 0;
        let digits = unscaled.unsigned_abs().to_string();
        let scale = scale.max(0) as usize;
        let (int, frac) = if digits.len() > scale {
            digits.split_at(digits.len() - scale)
        } else {
            ("", digits.as_str())
        };
        let frac_full = format!("{frac:0>scale$}");
        let int = int.trim_start_matches('0');
        let frac = frac_full.trim_end_matches('0');
        let (mut room_int, mut room_frac) = (0, 0);
        let mut seen_point = false;
        for e in &self.elements {
            match e {
                Element::Digits(runs) => {
                    let n: usize = runs.iter().map(|r| r.width()).sum();
                    if seen_point {
                        room_frac += n;
                    } else {
                        room_int += n;
                    }
                }
                Element::Point => seen_point = true,
                _ => {}
            }
        }
        let (int, frac): (Vec<char>, Vec<char>) = if int.len() > room_int || frac.len() > room_frac
        {
            (vec!['#'; room_int], vec!['#'; room_frac])
        } else {
            (
                std::iter::repeat_n(' ', room_int - int.len())
                    .chain(int.chars())
                    .collect(),
                frac.chars()
                    .chain(std::iter::repeat('0'))
                    .take(room_frac)
                    .collect(),
            )
        };
        let (mut int_at, mut frac_at) = (0, 0);
        let mut out: Vec<char> = Vec::new();
        let mut after_point = false;
        for e in &self.elements {
            match e {
                Element::Digits(runs) => {
                    for run in runs {
                        match run {
                            Run::Comma => {
                                if out.last().is_some_and(|c| c.is_ascii_digit()) {
                                    out.push(',');
                                } else {
                                    push_space(&mut out);
                                }
                            }
                            Run::Exactly(n) | Run::AtMost(n) if after_point => {
                                for _ in 0..*n {
                                    out.push(frac.get(frac_at).copied().unwrap_or('0'));
                                    frac_at += 1;
                                }
                            }
                            Run::Exactly(n) | Run::AtMost(n) => {
                                for _ in 0..*n {
                                    match int.get(int_at).copied().unwrap_or(' ') {
                                        ' ' if matches!(run, Run::Exactly(_)) => out.push('0'),
                                        ' ' => push_space(&mut out),
                                        c => out.push(c),
                                    }
                                    int_at += 1;
                                }
                            }
                        }
                    }
                }
                Element::Point => {
                    if out.last() == Some(&' ') {
                        out.pop();
                        out.push('0');
                    }
                    out.push('.');
                    after_point = true;
                }
                Element::Dollar => out.push('$'),
                Element::Sign => {
                    drop_lone_point(&mut out);
                    push_sign(&mut out, if negative { '-' } else { '+' });
                }
                Element::Minus => {
                    if negative {
                        drop_lone_point(&mut out);
                        push_sign(&mut out, '-');
                    } else {
                        out.push(' ');
                    }
                }
                Element::Open => {
                    if negative {
                        out.push('<');
                    }
                }
                Element::Close => {
                    drop_lone_point(&mut out);
                    if negative {
                        push_sign(&mut out, '>');
                    } else {
                        out.push(' ');
                        out.push(' ');
                    }
                }
            }
        }
        drop_lone_point(&mut out);
        let text: String = out.into_iter().collect();
        if text.is_empty() || text == "+" || text == "-" {
            "0".to_string()
        } else {
            text
        }
    }
}

fn describe(e: &Element) -> &'static str {
    match e {
        Element::Digits(_) => "digit sequence",
        Element::Point => ". or D",
        Element::Dollar => "$",
        Element::Sign => "S",
        Element::Minus => "MI",
        Element::Open | Element::Close => "PR",
    }
}

/// A blank for a missing digit: a sign or `<` just before it moves right,
/// to stay next to the digits.
fn push_space(out: &mut Vec<char>) {
    out.push(' ');
    let mut i = out.len() - 1;
    while i >= 1 && matches!(out[i - 1], '+' | '-' | '<') && out[i] == ' ' {
        out.swap(i - 1, i);
        i -= 1;
    }
}

/// A sign after blanks moves left, before them.
fn push_sign(out: &mut Vec<char>, sign: char) {
    out.push(sign);
    let mut i = out.len() - 1;
    while i >= 1 && out[i - 1] == ' ' && out[i] == sign {
        out.swap(i - 1, i);
        i -= 1;
    }
}

/// A decimal point with no digits after it becomes a blank.
fn drop_lone_point(out: &mut [char]) {
    if let Some(i) = out.iter().position(|c| *c == '.') {
        if i + 1 == out.len() || out[i + 1] == ' ' {
            out[i] = ' ';
        }
    }
}

#[cfg(test)]
mod tests {
    use super::NumberFormat;

    fn parse(input: &str, format: &str) -> Option<(i128, u8, i8)> {
        let f = NumberFormat::parse(format).ok()?;
        f.parse_number(input).map(|v| (v, f.precision, f.scale))
    }

    fn show(unscaled: i128, scale: i8, format: &str) -> String {
        NumberFormat::parse(format)
            .map(|f| f.format_number(unscaled, scale))
            .unwrap_or_else(|e| e)
    }

    #[test]
    fn parses_the_reference_examples() {
        assert_eq!(parse("454", "999"), Some((454, 3, 0)));
        assert_eq!(parse("454.00", "000.00"), Some((45400, 5, 2)));
        assert_eq!(parse("12,454", "99,999"), Some((12454, 5, 0)));
        assert_eq!(parse("$78.12", "$99.99"), Some((7812, 4, 2)));
        assert_eq!(parse("12,454.8-", "99,999.9S"), Some((-124548, 6, 1)));
        assert_eq!(parse("-$12,345.67", "S$999,099.99"), Some((-1234567, 8, 2)));
        assert_eq!(parse("$345", "S$999,099.99"), Some((34500, 8, 2)));
        assert_eq!(parse("$45", "S$999,099.99"), None);
        assert_eq!(parse("<454>", "999PR"), Some((-454, 3, 0)));
        assert_eq!(parse("12454", "99,999"), None);
        assert_eq!(parse("$78.12", "$99"), None);
        assert_eq!(parse("  454  ", "999"), Some((454, 3, 0)));
        assert_eq!(parse("", "999"), None);
    }

    #[test]
    fn formats_the_reference_examples() {
        assert_eq!(show(454, 0, "999"), "454");
        assert_eq!(show(45400, 2, "000D00"), "454.00");
        assert_eq!(show(12454, 0, "99G999"), "12,454");
        assert_eq!(show(7812, 2, "$99.99"), "$78.12");
        assert_eq!(show(-124548, 1, "99G999D9S"), "12,454.8-");
        assert_eq!(show(-454, 0, "999PR"), "<454>");
        assert_eq!(show(454, 0, "999PR"), "454  ");
        assert_eq!(show(-5, 0, "S999"), "  -5");
        assert_eq!(show(12345, 0, "99"), "##");
        assert_eq!(show(5, 1, "9.99"), "0.50");
    }

    #[test]
    fn refuses_bad_formats() {
        assert!(NumberFormat::parse("").is_err());
        assert!(NumberFormat::parse("$").is_err());
        assert!(NumberFormat::parse("99$").is_ok());
        assert!(NumberFormat::parse("9..9").is_err());
        assert!(NumberFormat::parse(",99").is_err());
        assert!(NumberFormat::parse("9.9,9").is_err());
        assert!(NumberFormat::parse("9x").is_err());
    }
}
