//! Postgres template patterns (`YYYY-MM-DD HH24:MI:SS.US`, `FMMonth`,
//! `Dy`, `IW` …) beside Spark's, for `to_char`, `to_date`, `to_timestamp`
//! and `date_format` as Postgres clients and BI tools send them
//! (<https://www.postgresql.org/docs/15/functions-formatting.html>).
//!
//! Which a pattern is: Databricks refuses week-based years (`Y`) in these
//! functions and has no `HH24`, `MI`, `IW`, `US`, `TZ` or `FM`, so a pattern
//! holding one of those outside quotes is a template, and so is one that
//! Spark's pattern reader refuses but a template reads with an upper-case
//! keyword (`Mon DD`; not `yyyy-nn`, which stays an error). Every pattern valid
//! in Databricks keeps its Databricks meaning (`yyyy-mm-dd` is still year,
//! minutes, day).

use chrono::{Datelike, Timelike};

use super::pattern::{pad, write_offset, Case, Field, NameOf, Numbered, Part, Shown};
use crate::error::FunctionError;

/// A template read twice: how it writes values and how it reads text.
pub(super) struct Template {
    pub format: Vec<Field>,
    pub parse: Vec<Field>,
    /// A keyword was written with an upper-case first letter (`Mon`, `DD`):
    /// what tells a template from a mistyped Spark pattern (`yyyy-nn`).
    pub upper_keyword: bool,
}

/// Whether `text` holds a token only Postgres templates have.
pub(super) fn is_template(text: &str) -> bool {
    let mut outside = String::with_capacity(text.len());
    let mut quote = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None => outside.push(c),
        }
    }
    outside.contains('Y')
        || ["HH24", "HH12", "MI", "IW", "US", "TZ", "FM"]
            .iter()
            .any(|t| outside.contains(t))
}

/// What a keyword of the template is.
#[derive(Clone, Copy)]
enum Keyword {
    /// Written and read as this field; `width` is its zero-padding.
    Plain(fn(width: usize) -> Field, Part, usize),
    Month(bool),
    Day(bool),
    Meridiem(bool),
    Era,
    Number(Numbered, usize),
    Fraction(usize),
    ZoneName,
}

/// The keywords, longest first where one is a prefix of another; matched
/// without regard to case (the case of a name's letters sets its case).
const KEYWORDS: &[(&str, Keyword)] = &[
    ("Y,YYY", Keyword::Number(Numbered::YearWithComma, 5)),
    ("YYYY", Keyword::Plain(Field::Year, Part::Year, 4)),
    ("YYY", Keyword::Number(Numbered::YearDigits(3), 3)),
    ("YY", Keyword::Number(Numbered::YearDigits(2), 2)),
    ("Y", Keyword::Number(Numbered::YearDigits(1), 1)),
    ("IYYY", Keyword::Number(Numbered::IsoYear(4), 4)),
    ("IYY", Keyword::Number(Numbered::IsoYear(3), 3)),
    ("IY", Keyword::Number(Numbered::IsoYear(2), 2)),
    ("IDDD", Keyword::Number(Numbered::IsoDayOfYear, 3)),
    ("ID", Keyword::Number(Numbered::IsoDayOfWeek, 1)),
    ("IW", Keyword::Number(Numbered::IsoWeek, 2)),
    ("I", Keyword::Number(Numbered::IsoYear(1), 1)),
    ("HH24", Keyword::Plain(Field::Hour24, Part::Hour24, 2)),
    ("HH12", Keyword::Plain(Field::Hour12, Part::Hour12, 2)),
    ("HH", Keyword::Plain(Field::Hour12, Part::Hour12, 2)),
    ("MI", Keyword::Plain(Field::Minute, Part::Minute, 2)),
    ("SSSSS", Keyword::Number(Numbered::SecondsOfDay, 0)),
    ("SSSS", Keyword::Number(Numbered::SecondsOfDay, 0)),
    ("SS", Keyword::Plain(Field::Second, Part::Second, 2)),
    ("MS", Keyword::Fraction(3)),
    ("US", Keyword::Fraction(6)),
    ("FF1", Keyword::Fraction(1)),
    ("FF2", Keyword::Fraction(2)),
    ("FF3", Keyword::Fraction(3)),
    ("FF4", Keyword::Fraction(4)),
    ("FF5", Keyword::Fraction(5)),
    ("FF6", Keyword::Fraction(6)),
    ("A.M.", Keyword::Meridiem(true)),
    ("P.M.", Keyword::Meridiem(true)),
    ("AM", Keyword::Meridiem(false)),
    ("PM", Keyword::Meridiem(false)),
    ("A.D.", Keyword::Era),
    ("B.C.", Keyword::Era),
    ("AD", Keyword::Era),
    ("BC", Keyword::Era),
    ("MONTH", Keyword::Month(false)),
    ("MON", Keyword::Month(true)),
    ("MM", Keyword::Plain(Field::Month, Part::Month, 2)),
    ("DAY", Keyword::Day(false)),
    ("DDD", Keyword::Plain(Field::DayOfYear, Part::DayOfYear, 3)),
    ("DD", Keyword::Plain(Field::Day, Part::Day, 2)),
    ("DY", Keyword::Day(true)),
    ("D", Keyword::Number(Numbered::DayOfWeek, 1)),
    ("WW", Keyword::Number(Numbered::WeekOfYear, 2)),
    ("W", Keyword::Number(Numbered::WeekOfMonth, 1)),
    ("CC", Keyword::Number(Numbered::Century, 2)),
    ("J", Keyword::Number(Numbered::Julian, 0)),
    ("Q", Keyword::Number(Numbered::Quarter, 1)),
    (
        "RM",
        Keyword::Number(Numbered::RomanMonth { upper: true }, 0),
    ),
    ("TZH", Keyword::Number(Numbered::OffsetHours, 0)),
    ("TZM", Keyword::Number(Numbered::OffsetMinutes, 2)),
    ("TZ", Keyword::ZoneName),
    ("OF", Keyword::Number(Numbered::Offset, 0)),
];

/// Reads a template; text it cannot read is `INVALID_DATETIME_PATTERN`.
pub(super) fn parse(text: &str) -> Result<Template, FunctionError> {
    let chars: Vec<char> = text.chars().collect();
    let mut template = Template {
        format: Vec::new(),
        parse: Vec::new(),
        upper_keyword: false,
    };
    let literal = |t: &mut Template, s: &str| {
        for fields in [&mut t.format, &mut t.parse] {
            if let Some(Field::Literal(last)) = fields.last_mut() {
                last.push_str(s);
            } else {
                fields.push(Field::Literal(s.to_string()));
            }
        }
    };
    let mut pos = 0;
    let mut fill = false;
    while pos < chars.len() {
        let rest: String = chars[pos..].iter().collect();
        let upper = rest.to_ascii_uppercase();
        // Modifiers before a keyword: FM (no padding), FX and TM (no effect here).
        if upper.starts_with("FM") {
            fill = true;
            pos += 2;
            continue;
        }
        if upper.starts_with("FX") || upper.starts_with("TM") {
            pos += 2;
            continue;
        }
        if chars[pos] == '"' {
            let mut text = String::new();
            pos += 1;
            loop {
                match chars.get(pos) {
                    None => {
                        return Err(FunctionError::InvalidDatetimePattern {
                            pattern: text,
                            reason: "unterminated quote".into(),
                        })
                    }
                    Some('"') => {
                        pos += 1;
                        break;
                    }
                    Some('\\') if pos + 1 < chars.len() => {
                        text.push(chars[pos + 1]);
                        pos += 2;
                    }
                    Some(c) => {
                        text.push(*c);
                        pos += 1;
                    }
                }
            }
            literal(&mut template, &text);
            continue;
        }
        if chars[pos] == '\\' && pos + 1 < chars.len() {
            literal(&mut template, &chars[pos + 1].to_string());
            pos += 2;
            continue;
        }
        let Some((word, keyword)) = KEYWORDS.iter().find(|(k, _)| upper.starts_with(k)) else {
            literal(&mut template, &chars[pos].to_string());
            pos += 1;
            fill = false;
            continue;
        };
        let written: String = chars[pos..pos + word.len()].iter().collect();
        pos += word.len();
        template.upper_keyword |= written.starts_with(|c: char| c.is_ascii_uppercase());
        let case = name_case(&written);
        let (format, parse) = keyword_fields(*keyword, fill, case, &written);
        template.format.push(format);
        template.parse.push(parse);
        fill = false;
        // A TH/th suffix writes the number's ordinal; SP is not supported.
        let next: String = chars[pos..].iter().take(2).collect();
        if next == "TH" || next == "th" {
            template.format.push(Field::Ordinal {
                upper: next == "TH",
            });
            template.parse.push(Field::Ordinal {
                upper: next == "TH",
            });
            pos += 2;
        }
    }
    Ok(template)
}

/// The case a name keyword's letters give it: `MONTH`, `Month`, `month`.
fn name_case(written: &str) -> Case {
    let mut letters = written.chars().filter(|c| c.is_ascii_alphabetic());
    match (letters.next(), letters.next()) {
        (Some(a), Some(b)) if a.is_ascii_uppercase() && b.is_ascii_uppercase() => Case::Upper,
        (Some(a), _) if a.is_ascii_uppercase() => Case::Title,
        _ => Case::Lower,
    }
}

/// How one keyword writes and reads.
fn keyword_fields(keyword: Keyword, fill: bool, case: Case, written: &str) -> (Field, Field) {
    let width = |w: usize| if fill { 1 } else { w };
    match keyword {
        Keyword::Plain(field, part, w) => (
            field(width(w)),
            Field::Digits {
                into: part,
                max: if part == Part::Year { 4 } else { w },
            },
        ),
        Keyword::Month(abbreviated) | Keyword::Day(abbreviated) => {
            let of = if matches!(keyword, Keyword::Month(_)) {
                NameOf::Month
            } else {
                NameOf::Day
            };
            let field = Field::Name {
                of,
                abbreviated,
                case,
                padded: !fill,
            };
            (field.clone(), field)
        }
        Keyword::Meridiem(dots) => {
            let field = Field::Meridiem {
                upper: case != Case::Lower,
                dots,
            };
            (field.clone(), field)
        }
        Keyword::Era => (Field::Era, Field::Era),
        Keyword::Number(of, w) => {
            let of = match of {
                Numbered::RomanMonth { .. } => Numbered::RomanMonth {
                    upper: written.starts_with('R'),
                },
                other => other,
            };
            let field = Field::Number {
                of,
                width: if fill { 0 } else { w },
            };
            (field.clone(), field)
        }
        Keyword::Fraction(n) => (
            Field::Fraction(n),
            Field::Digits {
                into: Part::Fraction,
                max: n,
            },
        ),
        Keyword::ZoneName => (Field::ZoneName(1), Field::ZoneName(1)),
    }
}

/// Writes a [`Field::Number`].
pub(super) fn format_number(of: Numbered, width: usize, v: &Shown, out: &mut String) {
    let t = &v.local;
    let value: i64 = match of {
        Numbered::YearDigits(n) => (t.year() as i64).rem_euclid(10i64.pow(n)),
        Numbered::YearWithComma => {
            let y = t.year();
            out.push_str(&format!("{},{:03}", y / 1000, (y % 1000).abs()));
            return;
        }
        Numbered::IsoYear(n) => {
            let y = t.iso_week().year() as i64;
            if n == 4 {
                y
            } else {
                y.rem_euclid(10i64.pow(n))
            }
        }
        Numbered::IsoWeek => t.iso_week().week() as i64,
        Numbered::IsoDayOfWeek => t.weekday().number_from_monday() as i64,
        Numbered::IsoDayOfYear => {
            (t.iso_week().week() as i64 - 1) * 7 + t.weekday().number_from_monday() as i64
        }
        Numbered::DayOfWeek => t.weekday().number_from_sunday() as i64,
        Numbered::WeekOfMonth => (t.day() as i64 - 1) / 7 + 1,
        Numbered::WeekOfYear => (t.ordinal() as i64 - 1) / 7 + 1,
        Numbered::Century => {
            let y = t.year() as i64;
            if y > 0 {
                (y + 99) / 100
            } else {
                -((99 - y) / 100)
            }
        }
        Numbered::Julian => t.num_days_from_ce() as i64 + 1_721_425,
        Numbered::SecondsOfDay => t.num_seconds_from_midnight() as i64,
        Numbered::Quarter => (t.month() as i64 - 1) / 3 + 1,
        Numbered::RomanMonth { upper } => {
            const ROMAN: [&str; 12] = [
                "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII",
            ];
            let r = ROMAN[t.month0() as usize];
            let r = if upper {
                r.to_string()
            } else {
                r.to_ascii_lowercase()
            };
            // Blank-padded to 4 unless FM.
            out.push_str(&format!("{r:<w$}", w = if width == 0 { 0 } else { 4 }));
            return;
        }
        Numbered::OffsetHours => {
            let h = v.offset / 3600;
            out.push(if v.offset < 0 { '-' } else { '+' });
            pad(out, h.abs() as i64, 2);
            return;
        }
        Numbered::OffsetMinutes => ((v.offset.abs() % 3600) / 60) as i64,
        Numbered::Offset => {
            if v.offset % 3600 == 0 {
                write_offset(out, v.offset, 1);
            } else {
                write_offset(out, v.offset, 3);
            }
            return;
        }
    };
    pad(out, value, width.max(1));
}

/// Writes the ordinal suffix of the number just written (`1st`, `12th`).
pub(super) fn format_ordinal(upper: bool, out: &mut String) {
    let digits: String = out
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let n: u64 = digits
        .get(digits.len().saturating_sub(2)..)
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    let suffix = match (n % 100, n % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    if upper {
        out.push_str(&suffix.to_ascii_uppercase())
    } else {
        out.push_str(suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::super::pattern::{shown_at, Pattern};
    use super::*;

    fn shown(text: &str) -> String {
        shown_at(text, 7200, "Europe/Paris")
    }

    #[test]
    fn tells_templates_from_spark_patterns() {
        assert!(is_template("YYYY-MM-DD"));
        assert!(is_template("HH24:MI:SS"));
        assert!(is_template("FMDay"));
        assert!(!is_template("yyyy-MM-dd HH:mm:ss"));
        assert!(!is_template("yyyy-mm-dd"));
        assert!(!is_template("'Year' yyyy"));
    }

    #[test]
    fn formats_as_postgres_does() {
        assert_eq!(
            shown("YYYY-MM-DD HH24:MI:SS.US"),
            "2016-04-08 13:08:15.123456"
        );
        assert_eq!(shown("YYYY-MM"), "2016-04");
        assert_eq!(shown("Month DD, YYYY"), "April     08, 2016");
        assert_eq!(shown("FMMonth FMDD, YYYY"), "April 8, 2016");
        assert_eq!(shown("Dy Mon DD"), "Fri Apr 08");
        assert_eq!(shown("DAY"), "FRIDAY   ");
        assert_eq!(shown("HH12:MI AM"), "01:08 PM");
        assert_eq!(shown("YYYY \"week\" IW, D"), "2016 week 14, 6");
        assert_eq!(shown("DDDth Q"), "099th 2");
        assert_eq!(shown("FMDDth"), "8th");
        assert_eq!(
            shown("YYYY-MM-DD\"T\"HH24:MI:SSOF"),
            "2016-04-08T13:08:15+02"
        );
        assert_eq!(shown("HH24:MI:SS.MS"), "13:08:15.123");
    }

    #[test]
    fn parses_as_postgres_does() {
        let p = Pattern::new("YYYY-MM-DD").unwrap();
        assert_eq!(
            p.parse("2025-12-01").unwrap().0.to_string(),
            "2025-12-01 00:00:00"
        );
        let p = Pattern::new("YYYY-MM-DD HH24:MI:SS.US").unwrap();
        assert_eq!(
            p.parse("2025-12-01 07:05:09.000120").unwrap().0.to_string(),
            "2025-12-01 07:05:09.000120"
        );
        let p = Pattern::new("DD Mon YYYY").unwrap();
        assert_eq!(
            p.parse("8 apr 2016").unwrap().0.date().to_string(),
            "2016-04-08"
        );
        let p = Pattern::new("YYYYMMDD").unwrap();
        assert_eq!(
            p.parse("20160408").unwrap().0.date().to_string(),
            "2016-04-08"
        );
        assert!(Pattern::new("YYYY-MM-DD")
            .unwrap()
            .parse("2016-13-01")
            .is_err());
        assert!(Pattern::new("YYYY-MM-DD")
            .unwrap()
            .parse("yesterday")
            .is_err());
    }
}
