//! Date and timestamp functions with Spark datetime patterns
//! (<https://docs.databricks.com/sql/language-manual/sql-ref-functions-builtin.html#date-timestamp-and-interval-functions>).
//!
//! A TIMESTAMP is an instant (microseconds since the epoch, UTC), shown in
//! the session time zone; a TIMESTAMP_NTZ value is shown as it is. Strings
//! are read as Spark casts them (`2009-07-30 04:17:52` is a valid DATE).
//! datafusion-spark provides `add_months`, `date_add`, `date_sub`,
//! `last_day`, `next_day`, `trunc`, `date_trunc`, `hour`, `minute`,
//! `second`, `weekday`, `unix_date`, `make_interval` and more.

mod pattern;
mod template;

use std::fmt::Write;
use std::sync::{Arc, Mutex};

use chrono::{
    DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone, Timelike,
};
use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::error::{df, FunctionError};
use super::udf::{
    date_rows, double_rows, int_rows, long_rows, string_rows, strs, timestamp_rows, Arg, Call,
    Returns, Strs, Udf, DATE32, FLOAT64, INT32, INT64, UTF8,
};
pub(crate) use pattern::{Pattern, Shown};

use Arg::{Any, Double, Long, Str};

/// The type of the TIMESTAMPs these functions return (Delta's `timestamp`).
pub(crate) fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some(utc()))
}

/// The zone name of [`timestamp`] values.
fn utc() -> Arc<str> {
    Arc::from("UTC")
}

/// The functions.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        Udf::new("date_format", &[&[Any, Str]], Returns::Fixed(&UTF8), date_format)
            .describe("date_format(expr, fmt) - Converts a timestamp to a string in the format fmt.")
            .build(),
        Udf::new("to_date", &[&[Any], &[Any, Str]], Returns::Fixed(&DATE32), to_date)
            .describe("to_date(expr [, fmt]) - Returns expr cast to a date using an optional formatting.")
            .build(),
        Udf::new("try_to_date", &[&[Any], &[Any, Str]], Returns::Fixed(&DATE32), try_to_date)
            .describe("try_to_date(expr [, fmt]) - to_date, or NULL where expr does not match fmt.")
            .build(),
        Udf::new("to_timestamp", &[&[Any], &[Any, Str]], Returns::Computed(timestamp_type), to_timestamp)
            .aliases(&["to_timestamp_ltz"])
            .describe("to_timestamp(expr [, fmt]) - Returns expr cast to a timestamp using an optional formatting.")
            .build(),
        Udf::new("try_to_timestamp", &[&[Any], &[Any, Str]], Returns::Computed(timestamp_type), try_to_timestamp)
            .describe("try_to_timestamp(expr [, fmt]) - to_timestamp, or NULL where expr does not match fmt.")
            .build(),
        Udf::new("unix_timestamp", &[&[], &[Any], &[Any, Str]], Returns::Fixed(&INT64), unix_timestamp)
            .aliases(&["to_unix_timestamp"])
            .stable()
            .describe("unix_timestamp([expr [, fmt]]) - Returns the UNIX timestamp of the current or specified time.")
            .build(),
        Udf::new("from_unixtime", &[&[Long], &[Long, Str]], Returns::Fixed(&UTF8), from_unixtime)
            .describe("from_unixtime(unixTime [, fmt]) - Returns unixTime in fmt.")
            .build(),
        Udf::new("datediff", &[&[Any, Any], &[Str, Any, Any]], Returns::Computed(datediff_type), datediff)
            .aliases(&["date_diff", "timestampdiff", "timediff"])
            .describe("datediff(endDate, startDate) - Returns the number of days from startDate to endDate; datediff(unit, start, end) - the number of whole units.")
            .build(),
        Udf::new("date_add", &[&[Any, Long], &[Str, Long, Any]], Returns::Computed(date_add_type), |c| date_add(c, 1))
            .aliases(&["dateadd", "timestampadd"])
            .describe("date_add(startDate, numDays) - Returns the date numDays after startDate; date_add(unit, value, expr) - Adds value units to a timestamp expr.")
            .build(),
        Udf::new("date_sub", &[&[Any, Long]], Returns::Computed(date_add_type), |c| date_add(c, -1))
            .describe("date_sub(startDate, numDays) - Returns the date numDays before startDate.")
            .build(),
        Udf::new("months_between", &[&[Any, Any], &[Any, Any, Arg::Bool]], Returns::Fixed(&FLOAT64), months_between)
            .describe("months_between(expr1, expr2 [, roundOff]) - Returns the number of months elapsed between dates or timestamps expr1 and expr2.")
            .build(),
        field("year", |c| date_field(c, |d| d.year()), "year(expr) - Returns the year component of the date/timestamp."),
        field("quarter", |c| date_field(c, |d| (d.month() as i32 - 1) / 3 + 1), "quarter(expr) - Returns the quarter of the year for date, in the range 1 to 4."),
        field("month", |c| date_field(c, |d| d.month() as i32), "month(expr) - Returns the month component of the date/timestamp."),
        Udf::new("day", &[&[Any]], Returns::Fixed(&INT32), |c| date_field(c, |d| d.day() as i32))
            .aliases(&["dayofmonth"])
            .describe("day(expr) - Returns the day of month of the date or timestamp.")
            .build(),
        field("dayofweek", |c| date_field(c, |d| d.weekday().num_days_from_sunday() as i32 + 1), "dayofweek(expr) - Returns the day of the week for date/timestamp (1 = Sunday, ..., 7 = Saturday)."),
        field("dayofyear", |c| date_field(c, |d| d.ordinal() as i32), "dayofyear(expr) - Returns the day of year of the date/timestamp."),
        field("weekofyear", |c| date_field(c, |d| d.iso_week().week() as i32), "weekofyear(expr) - Returns the week of the year of the given date (ISO 8601)."),
        field("hour", |c| time_field(c, |t| t.hour() as i32), "hour(expr) - Returns the hour component of the timestamp."),
        field("minute", |c| time_field(c, |t| t.minute() as i32), "minute(expr) - Returns the minute component of the timestamp."),
        field("second", |c| time_field(c, |t| t.second() as i32), "second(expr) - Returns the second component of the timestamp."),
        field("weekday", |c| date_field(c, |d| d.weekday().num_days_from_monday() as i32), "weekday(expr) - Returns the day of the week for date/timestamp (0 = Monday, 1 = Tuesday, ..., 6 = Sunday)."),
        Udf::new("lakegres_seconds", &[&[Any]], Returns::Fixed(&SECONDS), seconds_with_fraction)
            .build(),
        Udf::new("monthname", &[&[Any]], Returns::Fixed(&UTF8), monthname)
            .describe("monthname(expr) - Returns the three-letter abbreviated month name of the date or timestamp.")
            .build(),
        Udf::new("to_timestamp_ntz", &[&[Any], &[Any, Str]], Returns::Computed(ntz_type), to_timestamp_ntz)
            .describe("to_timestamp_ntz(expr [, fmt]) - Returns expr cast to a TIMESTAMP_NTZ using an optional formatting.")
            .build(),
        Udf::new("make_timestamp_ntz", &[&[Long, Long, Long, Long, Long, Double]], Returns::Computed(ntz_type), |c| make_timestamp_as(c, false, true))
            .describe("make_timestamp_ntz(year, month, day, hour, min, sec) - Creates a TIMESTAMP_NTZ from fields.")
            .build(),
        Udf::new("try_make_timestamp", &[&[Long, Long, Long, Long, Long, Double], &[Long, Long, Long, Long, Long, Double, Str]], Returns::Computed(timestamp_type), |c| make_timestamp_as(c, true, false))
            .aliases(&["try_make_timestamp_ltz"])
            .describe("try_make_timestamp(year, month, day, hour, min, sec [, timezone]) - make_timestamp, or NULL where the fields are not a valid timestamp.")
            .build(),
        Udf::new("try_make_timestamp_ntz", &[&[Long, Long, Long, Long, Long, Double]], Returns::Computed(ntz_type), |c| make_timestamp_as(c, true, true))
            .describe("try_make_timestamp_ntz(year, month, day, hour, min, sec) - make_timestamp_ntz, or NULL where the fields are not a valid timestamp.")
            .build(),
        Udf::new("dayname", &[&[Any]], Returns::Fixed(&UTF8), dayname)
            .describe("dayname(expr) - Returns the three-letter English day name of the date.")
            .build(),
        Udf::new("make_date", &[&[Long, Long, Long]], Returns::Fixed(&DATE32), make_date)
            .describe("make_date(year, month, day) - Creates a date from year, month, and day fields.")
            .build(),
        Udf::new("make_timestamp", &[&[Long, Long, Long, Long, Long, Double], &[Long, Long, Long, Long, Long, Double, Str]], Returns::Computed(timestamp_type), make_timestamp)
            .aliases(&["make_timestamp_ltz"])
            .describe("make_timestamp(year, month, day, hour, min, sec [, timezone]) - Creates a timestamp from fields.")
            .build(),
        Udf::new("timestamp_seconds", &[&[Double]], Returns::Computed(timestamp_type), |c| epoch_to_timestamp(c, 1_000_000.0))
            .describe("timestamp_seconds(expr) - Creates a timestamp from the number of seconds since UTC epoch.")
            .build(),
        Udf::new("timestamp_millis", &[&[Long]], Returns::Computed(timestamp_type), |c| epoch_to_timestamp(c, 1_000.0))
            .describe("timestamp_millis(expr) - Creates a timestamp from the number of milliseconds since UTC epoch.")
            .build(),
        Udf::new("timestamp_micros", &[&[Long]], Returns::Computed(timestamp_type), |c| epoch_to_timestamp(c, 1.0))
            .describe("timestamp_micros(expr) - Creates a timestamp from the number of microseconds since UTC epoch.")
            .build(),
        Udf::new("unix_seconds", &[&[Any]], Returns::Fixed(&INT64), |c| timestamp_to_epoch(c, 1_000_000))
            .describe("unix_seconds(expr) - Returns the number of seconds since 1970-01-01 00:00:00 UTC.")
            .build(),
        Udf::new("unix_millis", &[&[Any]], Returns::Fixed(&INT64), |c| timestamp_to_epoch(c, 1_000))
            .describe("unix_millis(expr) - Returns the number of milliseconds since 1970-01-01 00:00:00 UTC.")
            .build(),
        Udf::new("unix_micros", &[&[Any]], Returns::Fixed(&INT64), |c| timestamp_to_epoch(c, 1))
            .describe("unix_micros(expr) - Returns the number of microseconds since 1970-01-01 00:00:00 UTC.")
            .build(),
        Udf::new("date_from_unix_date", &[&[Long]], Returns::Fixed(&DATE32), date_from_unix_date)
            .describe("date_from_unix_date(days) - Creates a date from the number of days since 1970-01-01.")
            .build(),
        Udf::new("current_timezone", &[&[]], Returns::Fixed(&UTF8), current_timezone)
            .stable()
            .describe("current_timezone() - Returns the current session local timezone.")
            .build(),
        Udf::new("convert_timezone", &[&[Str, Any], &[Str, Str, Any]], Returns::Computed(ntz_type), convert_timezone)
            .describe("convert_timezone([sourceTz, ] targetTz, sourceTs) - Converts TIMESTAMP_NTZ sourceTs from sourceTz to targetTz.")
            .build(),
        Udf::new("date", &[&[Any]], Returns::Fixed(&DATE32), to_date)
            .describe("date(expr) - Casts the value expr to DATE.")
            .build(),
        Udf::new("timestamp", &[&[Any]], Returns::Computed(timestamp_type), to_timestamp)
            .describe("timestamp(expr) - Casts expr to TIMESTAMP.")
            .build(),
        Udf::new("curdate", &[&[]], Returns::Fixed(&DATE32), current_date)
            .stable()
            .describe("curdate() - Returns the current date at the start of query evaluation.")
            .build(),
        Udf::new("getdate", &[&[]], Returns::Computed(timestamp_type), current_timestamp)
            .aliases(&["localtimestamp"])
            .stable()
            .describe("getdate() - Returns the current timestamp at the start of query evaluation.")
            .build(),
    ]
}

/// An INT field of a date or timestamp.
fn field(name: &'static str, kernel: super::udf::Kernel, description: &'static str) -> ScalarUDF {
    Udf::new(name, &[&[Any]], Returns::Fixed(&INT32), kernel)
        .describe(description)
        .build()
}

fn timestamp_type(_: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    Ok(timestamp())
}

fn ntz_type(_: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    Ok(DataType::Timestamp(TimeUnit::Microsecond, None))
}

fn date_add_type(types: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    Ok(if types.len() == 3 {
        timestamp()
    } else {
        DataType::Date32
    })
}

/// `date_add(start, days)` (a DATE), or `date_add(unit, value, expr)`.
fn date_add(c: &Call, sign: i64) -> Result<ColumnarValue> {
    if c.args.len() == 3 {
        return timestampadd(c);
    }
    let zone = c.time_zone();
    let values = Moment::new(c.arg(0)?)?;
    let days = c.long(1)?;
    date_rows(c.len(), |i| {
        let (Some(at), Some(n)) = (values.get(i, &zone)?, days.get(i)) else {
            return Ok(None);
        };
        let moved = date_to_days(at.date()) as i64 + sign * n;
        i32::try_from(moved).map(Some).map_err(|_| {
            df(FunctionError::ArithmeticOverflow {
                operation: format!("date_add({}, {n})", at.date()),
                hint: "add",
            })
        })
    })
}

fn datediff_type(types: &[DataType], _: &[Option<&ScalarValue>]) -> Result<DataType> {
    Ok(if types.len() == 3 {
        DataType::Int64
    } else {
        DataType::Int32
    })
}

/// A date-or-timestamp argument: DATE, TIMESTAMP[_NTZ] or a string.
pub(crate) enum Moment<'a> {
    Date(super::udf::Prim<'a, datafusion::arrow::datatypes::Date32Type>),
    /// Microseconds; `true` when an instant (shown in the session zone).
    Timestamp(Vec<Option<i64>>, bool),
    TimestampScalar(Option<i64>, bool),
    Str(Strs<'a>),
}

/// A value of a [`Moment`] argument at one row.
#[derive(Debug, Clone, Copy)]
pub(crate) enum At {
    Date(NaiveDate),
    /// The local date and time, and the instant if the value is one.
    Time(NaiveDateTime, Option<i64>),
}

impl At {
    pub fn date(&self) -> NaiveDate {
        match self {
            At::Date(d) => *d,
            At::Time(t, _) => t.date(),
        }
    }

    pub fn local(&self) -> NaiveDateTime {
        match self {
            At::Date(d) => d.and_time(NaiveTime::MIN),
            At::Time(t, _) => *t,
        }
    }
}

impl<'a> Moment<'a> {
    pub fn new(value: &'a ColumnarValue) -> Result<Self> {
        let data_type = value.data_type();
        Ok(match data_type {
            DataType::Date32 => Moment::Date(super::udf::Prim::new(value)?),
            DataType::Date64 => {
                let cast = value.cast_to(&DataType::Date32, None)?;
                let days = match &cast {
                    ColumnarValue::Scalar(s) => {
                        let v = match s {
                            ScalarValue::Date32(v) => v.map(i64::from),
                            _ => None,
                        };
                        return Ok(Moment::TimestampScalar(
                            v.map(|d| d * 86_400_000_000),
                            false,
                        ));
                    }
                    ColumnarValue::Array(a) => a
                        .as_primitive::<datafusion::arrow::datatypes::Date32Type>()
                        .iter()
                        .map(|d| d.map(|d| d as i64 * 86_400_000_000))
                        .collect(),
                };
                Moment::Timestamp(days, false)
            }
            DataType::Timestamp(unit, tz) => {
                let instant = tz.is_some();
                let factor: (i64, i64) = match unit {
                    TimeUnit::Second => (1_000_000, 1),
                    TimeUnit::Millisecond => (1_000, 1),
                    TimeUnit::Microsecond => (1, 1),
                    TimeUnit::Nanosecond => (1, 1_000),
                };
                match value {
                    ColumnarValue::Scalar(s) => {
                        let v = match s {
                            ScalarValue::TimestampSecond(v, _)
                            | ScalarValue::TimestampMillisecond(v, _)
                            | ScalarValue::TimestampMicrosecond(v, _)
                            | ScalarValue::TimestampNanosecond(v, _) => *v,
                            _ => None,
                        };
                        Moment::TimestampScalar(
                            v.map(|v| (v * factor.0).div_euclid(factor.1)),
                            instant,
                        )
                    }
                    ColumnarValue::Array(a) => {
                        let a = datafusion::arrow::compute::cast(
                            a,
                            &DataType::Timestamp(TimeUnit::Microsecond, None),
                        )?;
                        Moment::Timestamp(
                            a.as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>()
                                .iter()
                                .collect(),
                            instant,
                        )
                    }
                }
            }
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => {
                Moment::Str(strs(value)?)
            }
            other => {
                return Err(df(FunctionError::mismatch(
                    "a date function",
                    format!("expected a DATE, TIMESTAMP or STRING, got {other}"),
                )))
            }
        })
    }

    /// Row `i`, in `zone` for instants; a string that is not a date or
    /// timestamp is CAST_INVALID_INPUT.
    pub fn get(&self, i: usize, zone: &chrono_tz::Tz) -> Result<Option<At>> {
        Ok(match self {
            Moment::Date(d) => d.get(i).and_then(days_to_date).map(At::Date),
            Moment::Timestamp(v, instant) => v
                .get(i)
                .copied()
                .flatten()
                .and_then(|m| moment(m, *instant, zone)),
            Moment::TimestampScalar(v, instant) => v.and_then(|m| moment(m, *instant, zone)),
            Moment::Str(s) => match s.get(i) {
                None => None,
                Some(text) => Some(parse_moment(text, zone).ok_or_else(|| {
                    df(FunctionError::CastInvalidInput {
                        value: text.to_string(),
                        from: "STRING",
                        to: "TIMESTAMP".into(),
                    })
                })?),
            },
        })
    }
}

fn moment(micros: i64, instant: bool, zone: &chrono_tz::Tz) -> Option<At> {
    let utc = DateTime::from_timestamp_micros(micros)?;
    Some(if instant && *zone == chrono_tz::UTC {
        // The common case without a zone lookup per row.
        At::Time(utc.naive_utc(), Some(micros))
    } else if instant {
        At::Time(utc.with_timezone(zone).naive_local(), Some(micros))
    } else {
        At::Time(utc.naive_utc(), None)
    })
}

pub(crate) fn days_to_date(days: i32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(1970, 1, 1)?.checked_add_signed(Duration::days(days as i64))
}

pub(crate) fn date_to_days(date: NaiveDate) -> i32 {
    // Days from 0001-01-01 (day 1) to 1970-01-01.
    const EPOCH_FROM_CE: i32 = 719_163;
    date.num_days_from_ce() - EPOCH_FROM_CE
}

/// A string as Spark casts it to a date or timestamp: `yyyy[-[m]m[-[d]d]]`,
/// then optionally ` ` or `T` and `HH:mm[:ss[.fraction]]`, then optionally
/// a zone (`Z`, `+08:00`, `UTC`, `America/Los_Angeles`).
pub(crate) fn parse_moment(text: &str, zone: &chrono_tz::Tz) -> Option<At> {
    let text = text.trim();
    let (date_part, rest) = match text.find(['T', ' ']) {
        Some(i) => (&text[..i], Some(text[i + 1..].trim())),
        None => (text, None),
    };
    let mut parts = date_part.splitn(3, '-');
    let year: i32 = parts.next()?.parse().ok()?;
    if !(1..=9999).contains(&year) && date_part.len() < 4 {
        return None;
    }
    let month: u32 = match parts.next() {
        Some(m) if !m.is_empty() && m.len() <= 2 => m.parse().ok()?,
        Some(_) => return None,
        None => 1,
    };
    let day: u32 = match parts.next() {
        Some(d) if !d.is_empty() && d.len() <= 2 => d.parse().ok()?,
        Some(_) => return None,
        None => 1,
    };
    let date = NaiveDate::from_ymd_opt(year, month, day)?;
    let Some(rest) = rest.filter(|r| !r.is_empty()) else {
        return Some(At::Date(date));
    };
    // The time, then an optional zone.
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.'))
        .unwrap_or(rest.len());
    let (time_text, zone_text) = rest.split_at(end);
    let mut fields = time_text.splitn(3, ':');
    let hour: u32 = fields.next()?.parse().ok()?;
    let minute: u32 = fields.next().map(str::parse).transpose().ok()?.unwrap_or(0);
    let (second, nanos) = match fields.next() {
        Some(s) => {
            let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
            let second: u32 = whole.parse().ok()?;
            let digits = &frac[..frac.len().min(9)];
            let nanos = if digits.is_empty() {
                0
            } else {
                digits.parse::<u32>().ok()? * 10u32.pow(9 - digits.len() as u32)
            };
            (second, nanos)
        }
        None => (0, 0),
    };
    let local = date.and_time(NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)?);
    let zone_text = zone_text.trim();
    let tz = if zone_text.is_empty() {
        *zone
    } else {
        super::udf::parse_zone(zone_text)?
    };
    let instant = tz
        .from_local_datetime(&local)
        .earliest()?
        .timestamp_micros();
    Some(At::Time(local, Some(instant)))
}

/// The instant of a local time in `zone`.
pub(crate) fn instant_of(local: NaiveDateTime, zone: &chrono_tz::Tz) -> Option<i64> {
    Some(
        zone.from_local_datetime(&local)
            .earliest()?
            .timestamp_micros(),
    )
}

/// A pattern argument, read once when it is a literal.
struct Patterns<'a> {
    strs: Strs<'a>,
    fixed: Option<Pattern>,
    last: Mutex<Option<Pattern>>,
}

impl<'a> Patterns<'a> {
    fn new(strs: Strs<'a>) -> Result<Self> {
        let fixed = match strs.scalar() {
            Some(Some(text)) => Some(Pattern::new(text).map_err(df)?),
            _ => None,
        };
        Ok(Self {
            strs,
            fixed,
            last: Mutex::new(None),
        })
    }

    fn with<T>(&self, i: usize, f: impl FnOnce(&Pattern) -> T) -> Result<Option<T>> {
        if let Some(p) = &self.fixed {
            return Ok(Some(f(p)));
        }
        let Some(text) = self.strs.get(i) else {
            return Ok(None);
        };
        let mut last = self
            .last
            .lock()
            .map_err(|_| DataFusionError::Internal("pattern cache poisoned".into()))?;
        if last.as_ref().is_none_or(|p| p.text() != text) {
            *last = Some(Pattern::new(text).map_err(df)?);
        }
        Ok(last.as_ref().map(f))
    }
}

fn zone_name(zone: &chrono_tz::Tz) -> &'static str {
    zone.name()
}

fn offset_at(zone: &chrono_tz::Tz, local: NaiveDateTime, instant: Option<i64>) -> i32 {
    match instant.and_then(DateTime::from_timestamp_micros) {
        Some(utc) => zone
            .offset_from_utc_datetime(&utc.naive_utc())
            .fix()
            .local_minus_utc(),
        None => zone
            .offset_from_local_datetime(&local)
            .earliest()
            .map(|o| o.fix().local_minus_utc())
            .unwrap_or(0),
    }
}

pub(crate) fn date_format(c: &Call) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let values = Moment::new(c.arg(0)?)?;
    let patterns = Patterns::new(c.str(1)?)?;
    string_rows(c.len(), |i, out| {
        let Some(at) = values.get(i, &zone)? else {
            return Ok(false);
        };
        let local = at.local();
        let instant = match at {
            At::Time(_, instant) => instant,
            At::Date(_) => None,
        };
        Ok(patterns
            .with(i, |p| {
                // The offset only for patterns that show it: a zone lookup
                // per row otherwise.
                let offset = if p.shows_offset() {
                    offset_at(&zone, local, instant)
                } else {
                    0
                };
                let shown = Shown {
                    local,
                    offset,
                    zone: zone_name(&zone),
                };
                p.format(&shown, out)
            })?
            .is_some())
    })
}

/// Reads row `i` of a string with a pattern: the local time and the
/// instant (in the text's zone, or `zone`).
fn parse_with_pattern(
    text: &str,
    pattern: &Pattern,
    zone: &chrono_tz::Tz,
) -> std::result::Result<(NaiveDateTime, i64), FunctionError> {
    let (local, offset) = pattern.parse(text)?;
    let instant = match offset {
        Some(o) => (local - Duration::seconds(o as i64))
            .and_utc()
            .timestamp_micros(),
        None => instant_of(local, zone).ok_or_else(|| FunctionError::CannotParseTimestamp {
            value: text.to_string(),
            pattern: pattern.text().to_string(),
        })?,
    };
    Ok((local, instant))
}

fn to_date_kernel(c: &Call, lenient: bool) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    if c.args.len() == 2 {
        let values = c.str(0).map_err(|_| {
            df(FunctionError::mismatch(
                "to_date",
                "the first argument must be a STRING when a format is given",
            ))
        })?;
        let patterns = Patterns::new(c.str(1)?)?;
        return date_rows(c.len(), |i| {
            let Some(text) = values.get(i) else {
                return Ok(None);
            };
            // The local date the text shows; no instant is needed.
            match patterns.with(i, |p| p.parse(text))? {
                None => Ok(None),
                Some(Ok((local, _))) => Ok(Some(date_to_days(local.date()))),
                Some(Err(_)) if lenient => Ok(None),
                Some(Err(e)) => Err(df(e)),
            }
        });
    }
    let values = Moment::new(c.arg(0)?)?;
    date_rows(c.len(), |i| match values.get(i, &zone) {
        Ok(v) => Ok(v.map(|at| date_to_days(at.date()))),
        Err(_) if lenient => Ok(None),
        Err(e) => Err(e),
    })
}

fn to_date(c: &Call) -> Result<ColumnarValue> {
    to_date_kernel(c, false)
}

fn try_to_date(c: &Call) -> Result<ColumnarValue> {
    to_date_kernel(c, true)
}

fn to_timestamp_kernel(c: &Call, lenient: bool) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let zone_name = Some(utc());
    if c.args.len() == 2 {
        let values = c.str(0)?;
        let patterns = Patterns::new(c.str(1)?)?;
        return timestamp_rows(c.len(), zone_name.clone(), |i| {
            let Some(text) = values.get(i) else {
                return Ok(None);
            };
            match patterns.with(i, |p| parse_with_pattern(text, p, &zone))? {
                None => Ok(None),
                Some(Ok((_, instant))) => Ok(Some(instant)),
                Some(Err(_)) if lenient => Ok(None),
                Some(Err(e)) => Err(df(e)),
            }
        });
    }
    // A number is seconds since the epoch (CAST(n AS TIMESTAMP)).
    if c.arg(0)?.data_type().is_numeric() {
        let seconds = datafusion::arrow::compute::cast(&c.array(0)?, &DataType::Float64)?;
        let seconds = seconds
            .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
            .clone();
        return timestamp_rows(seconds.len(), zone_name, |i| {
            Ok(datafusion::arrow::array::Array::is_valid(&seconds, i)
                .then(|| (seconds.value(i) * 1e6).round() as i64))
        });
    }
    let values = Moment::new(c.arg(0)?)?;
    timestamp_rows(c.len(), zone_name.clone(), |i| match values.get(i, &zone) {
        Ok(Some(At::Date(d))) => Ok(instant_of(d.and_time(NaiveTime::MIN), &zone)),
        Ok(Some(At::Time(local, instant))) => Ok(instant.or_else(|| instant_of(local, &zone))),
        Ok(None) => Ok(None),
        Err(_) if lenient => Ok(None),
        Err(e) => Err(e),
    })
}

fn to_timestamp(c: &Call) -> Result<ColumnarValue> {
    to_timestamp_kernel(c, false)
}

fn try_to_timestamp(c: &Call) -> Result<ColumnarValue> {
    to_timestamp_kernel(c, true)
}

fn unix_timestamp(c: &Call) -> Result<ColumnarValue> {
    if c.args.is_empty() {
        let now = chrono::Utc::now().timestamp();
        return Ok(ColumnarValue::Scalar(ScalarValue::Int64(Some(now))));
    }
    let seconds = |micros: i64| micros.div_euclid(1_000_000);
    let zone = c.time_zone();
    if c.args.len() == 2
        && matches!(
            c.arg(0)?.data_type(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
        )
    {
        let values = c.str(0)?;
        let patterns = Patterns::new(c.str(1)?)?;
        return long_rows(c.len(), |i| {
            let Some(text) = values.get(i) else {
                return Ok(None);
            };
            match patterns.with(i, |p| parse_with_pattern(text, p, &zone))? {
                None => Ok(None),
                Some(Ok((_, instant))) => Ok(Some(seconds(instant))),
                Some(Err(e)) => Err(df(e)),
            }
        });
    }
    // Without a format, a string is read as `yyyy-MM-dd HH:mm:ss`.
    if matches!(
        c.arg(0)?.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) {
        let values = c.str(0)?;
        let pattern = Pattern::new("yyyy-MM-dd HH:mm:ss").map_err(df)?;
        return long_rows(c.len(), |i| match values.get(i) {
            None => Ok(None),
            Some(text) => parse_with_pattern(text, &pattern, &zone)
                .map(|(_, instant)| Some(seconds(instant)))
                .map_err(df),
        });
    }
    let values = Moment::new(c.arg(0)?)?;
    long_rows(c.len(), |i| {
        Ok(match values.get(i, &zone)? {
            None => None,
            Some(At::Date(d)) => instant_of(d.and_time(NaiveTime::MIN), &zone).map(seconds),
            Some(At::Time(local, instant)) => {
                instant.or_else(|| instant_of(local, &zone)).map(seconds)
            }
        })
    })
}

fn from_unixtime(c: &Call) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let seconds = c.long(0)?;
    let default = Pattern::new("yyyy-MM-dd HH:mm:ss").map_err(df)?;
    let patterns = if c.args.len() == 2 {
        Some(Patterns::new(c.str(1)?)?)
    } else {
        None
    };
    string_rows(c.len(), |i, out| {
        let Some(s) = seconds.get(i) else {
            return Ok(false);
        };
        let Some(utc) = DateTime::from_timestamp(s, 0) else {
            return Err(df(FunctionError::ArithmeticOverflow {
                operation: format!("from_unixtime({s})"),
                hint: "cast",
            }));
        };
        let local = utc.with_timezone(&zone).naive_local();
        let shown = Shown {
            local,
            offset: offset_at(&zone, local, Some(s * 1_000_000)),
            zone: zone_name(&zone),
        };
        match &patterns {
            Some(p) => Ok(p.with(i, |p| p.format(&shown, out))?.is_some()),
            None => {
                default.format(&shown, out);
                Ok(true)
            }
        }
    })
}

/// The units of `timestampadd`, `timestampdiff`, `datediff(unit, …)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Microsecond,
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

fn unit(text: &str) -> Result<Unit> {
    Ok(match text.trim().to_ascii_uppercase().as_str() {
        "MICROSECOND" | "MICROSECONDS" => Unit::Microsecond,
        "MILLISECOND" | "MILLISECONDS" => Unit::Millisecond,
        "SECOND" | "SECONDS" => Unit::Second,
        "MINUTE" | "MINUTES" => Unit::Minute,
        "HOUR" | "HOURS" => Unit::Hour,
        "DAY" | "DAYS" | "DAYOFYEAR" => Unit::Day,
        "WEEK" | "WEEKS" => Unit::Week,
        "MONTH" | "MONTHS" => Unit::Month,
        "QUARTER" | "QUARTERS" => Unit::Quarter,
        "YEAR" | "YEARS" => Unit::Year,
        other => {
            return Err(df(FunctionError::InvalidParameter {
                function: "timestampadd",
                parameter: "unit",
                reason: format!("unknown unit {other}"),
            }))
        }
    })
}

fn add_months_to(local: NaiveDateTime, months: i64) -> Option<NaiveDateTime> {
    let total = local.year() as i64 * 12 + local.month0() as i64 + months;
    let year = i32::try_from(total.div_euclid(12)).ok()?;
    let month = total.rem_euclid(12) as u32 + 1;
    let last = last_day_of(year, month)?;
    let date = NaiveDate::from_ymd_opt(year, month, local.day().min(last))?;
    Some(date.and_time(local.time()))
}

/// A local time moved by an interval's months, days and nanoseconds.
pub(crate) fn add_interval(
    local: NaiveDateTime,
    months: i64,
    days: i64,
    nanos: i64,
) -> Option<NaiveDateTime> {
    add_months_to(local, months)?
        .checked_add_signed(Duration::days(days))?
        .checked_add_signed(Duration::nanoseconds(nanos))
}

fn last_day_of(year: i32, month: u32) -> Option<u32> {
    let (ny, nm) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    Some(NaiveDate::from_ymd_opt(ny, nm, 1)?.pred_opt()?.day())
}

fn timestampadd(c: &Call) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let units = c.str(0)?;
    let amounts = c.long(1)?;
    let values = Moment::new(c.arg(2)?)?;
    timestamp_rows(c.len(), Some(utc()), |i| {
        let (Some(u), Some(n), Some(at)) = (units.get(i), amounts.get(i), values.get(i, &zone)?)
        else {
            return Ok(None);
        };
        let local = at.local();
        let instant = match at {
            At::Time(_, Some(m)) => m,
            _ => instant_of(local, &zone).unwrap_or_default(),
        };
        let overflow = || {
            df(FunctionError::ArithmeticOverflow {
                operation: format!("timestampadd({u}, {n})"),
                hint: "add",
            })
        };
        let micros = |per: i64| -> Result<Option<i64>> {
            Ok(Some(
                n.checked_mul(per)
                    .and_then(|d| instant.checked_add(d))
                    .ok_or_else(overflow)?,
            ))
        };
        match unit(u)? {
            Unit::Microsecond => micros(1),
            Unit::Millisecond => micros(1_000),
            Unit::Second => micros(1_000_000),
            Unit::Minute => micros(60_000_000),
            Unit::Hour => micros(3_600_000_000),
            // Days, weeks and months move the local time (as Spark does).
            Unit::Day | Unit::Week => {
                let days = if unit(u)? == Unit::Week {
                    n.checked_mul(7).ok_or_else(overflow)?
                } else {
                    n
                };
                let moved = local
                    .checked_add_signed(Duration::days(days))
                    .ok_or_else(overflow)?;
                Ok(instant_of(moved, &zone))
            }
            unit @ (Unit::Month | Unit::Quarter | Unit::Year) => {
                let months = match unit {
                    Unit::Month => n,
                    Unit::Quarter => n.checked_mul(3).ok_or_else(overflow)?,
                    _ => n.checked_mul(12).ok_or_else(overflow)?,
                };
                let moved = add_months_to(local, months).ok_or_else(overflow)?;
                Ok(instant_of(moved, &zone))
            }
        }
    })
}

fn whole_months(start: NaiveDateTime, end: NaiveDateTime) -> i64 {
    let mut months =
        (end.year() as i64 - start.year() as i64) * 12 + end.month() as i64 - start.month() as i64;
    // A month counts when the day and time of day have come round again.
    let end_key = (end.day(), end.time());
    let start_key = (start.day(), start.time());
    if months > 0 && end_key < start_key {
        months -= 1;
    } else if months < 0 && end_key > start_key {
        months += 1;
    }
    months
}

fn datediff(c: &Call) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    if c.args.len() == 2 {
        let end = Moment::new(c.arg(0)?)?;
        let start = Moment::new(c.arg(1)?)?;
        return int_rows(c.len(), |i| {
            let (Some(e), Some(s)) = (end.get(i, &zone)?, start.get(i, &zone)?) else {
                return Ok(None);
            };
            Ok(Some(date_to_days(e.date()) - date_to_days(s.date())))
        });
    }
    let units = c.str(0)?;
    let start = Moment::new(c.arg(1)?)?;
    let end = Moment::new(c.arg(2)?)?;
    long_rows(c.len(), |i| {
        let (Some(u), Some(s), Some(e)) = (units.get(i), start.get(i, &zone)?, end.get(i, &zone)?)
        else {
            return Ok(None);
        };
        let instant = |at: At| match at {
            At::Time(_, Some(m)) => m,
            other => instant_of(other.local(), &zone).unwrap_or_default(),
        };
        let micros = instant(e) - instant(s);
        let (sl, el) = (s.local(), e.local());
        Ok(Some(match unit(u)? {
            Unit::Microsecond => micros,
            Unit::Millisecond => micros / 1_000,
            Unit::Second => micros / 1_000_000,
            Unit::Minute => micros / 60_000_000,
            Unit::Hour => micros / 3_600_000_000,
            Unit::Day => (el - sl).num_days(),
            Unit::Week => (el - sl).num_days() / 7,
            Unit::Month => whole_months(sl, el),
            Unit::Quarter => whole_months(sl, el) / 3,
            Unit::Year => whole_months(sl, el) / 12,
        }))
    })
}

fn months_between(c: &Call) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let a = Moment::new(c.arg(0)?)?;
    let b = Moment::new(c.arg(1)?)?;
    let round = if c.args.len() == 3 {
        Some(c.bool(2)?)
    } else {
        None
    };
    double_rows(c.len(), |i| {
        let (Some(x), Some(y)) = (a.get(i, &zone)?, b.get(i, &zone)?) else {
            return Ok(None);
        };
        let round_off = match &round {
            Some(r) => r.get(i).unwrap_or(true),
            None => true,
        };
        let (x, y) = (x.local(), y.local());
        let months = (x.year() as i64 - y.year() as i64) * 12 + x.month() as i64 - y.month() as i64;
        let last = |t: NaiveDateTime| last_day_of(t.year(), t.month()) == Some(t.day());
        // Spark: the same day of month, or both the last day, is whole.
        let value = if x.day() == y.day() || (last(x) && last(y)) {
            months as f64
        } else {
            let seconds = |t: NaiveDateTime| {
                (t.day() as i64 - 1) * 86_400 + t.num_seconds_from_midnight() as i64
            };
            months as f64 + (seconds(x) - seconds(y)) as f64 / (31.0 * 86_400.0)
        };
        Ok(Some(if round_off {
            (value * 1e8).round() / 1e8
        } else {
            value
        }))
    })
}

fn date_field(c: &Call, f: fn(NaiveDate) -> i32) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let values = Moment::new(c.arg(0)?)?;
    int_rows(c.len(), |i| {
        Ok(values.get(i, &zone)?.map(|at| f(at.date())))
    })
}

/// `extract(SECOND FROM ts)` and `date_part('SECOND', ts)`: the seconds
/// with their fraction, a DECIMAL(8,6).
static SECONDS: DataType = DataType::Decimal128(8, 6);

fn seconds_with_fraction(c: &Call) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let values = Moment::new(c.arg(0)?)?;
    let mut out = Vec::with_capacity(c.len());
    for i in 0..c.len() {
        out.push(values.get(i, &zone)?.map(|at| {
            let t = at.local().time();
            i128::from(t.second()) * 1_000_000 + i128::from(t.nanosecond() / 1_000)
        }));
    }
    let array =
        datafusion::arrow::array::Decimal128Array::from(out).with_precision_and_scale(8, 6)?;
    Ok(ColumnarValue::Array(Arc::new(array)))
}

/// A field of the local time of a timestamp (midnight for a DATE).
fn time_field(c: &Call, f: fn(NaiveTime) -> i32) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let values = Moment::new(c.arg(0)?)?;
    int_rows(c.len(), |i| {
        Ok(values.get(i, &zone)?.map(|at| f(at.local().time())))
    })
}

fn monthname(c: &Call) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let values = Moment::new(c.arg(0)?)?;
    string_rows(c.len(), |i, out| {
        let Some(at) = values.get(i, &zone)? else {
            return Ok(false);
        };
        let _ = write!(out, "{}", at.date().format("%b"));
        Ok(true)
    })
}

/// `to_timestamp_ntz`: the local date and time `to_timestamp` reads.
fn to_timestamp_ntz(c: &Call) -> Result<ColumnarValue> {
    use datafusion::arrow::array::Array;
    let zone = c.time_zone();
    let instants = to_timestamp_kernel(c, false)?.into_array(c.len())?;
    let instants =
        instants.as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>();
    timestamp_rows(c.len(), None, |i| {
        if instants.is_null(i) {
            return Ok(None);
        }
        Ok(
            moment(instants.value(i), true, &zone)
                .map(|at| at.local().and_utc().timestamp_micros()),
        )
    })
}

fn dayname(c: &Call) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let values = Moment::new(c.arg(0)?)?;
    string_rows(c.len(), |i, out| {
        let Some(at) = values.get(i, &zone)? else {
            return Ok(false);
        };
        out.push_str(&at.date().weekday().to_string());
        Ok(true)
    })
}

fn make_date(c: &Call) -> Result<ColumnarValue> {
    let (y, m, d) = (c.long(0)?, c.long(1)?, c.long(2)?);
    date_rows(c.len(), |i| {
        let (Some(y), Some(m), Some(d)) = (y.get(i), m.get(i), d.get(i)) else {
            return Ok(None);
        };
        let date = i32::try_from(y)
            .ok()
            .zip(u32::try_from(m).ok())
            .zip(u32::try_from(d).ok())
            .and_then(|((y, m), d)| NaiveDate::from_ymd_opt(y, m, d))
            .ok_or_else(|| {
                df(FunctionError::InvalidParameter {
                    function: "make_date",
                    parameter: "year, month, day",
                    reason: format!("{y}-{m}-{d} is not a valid date"),
                })
            })?;
        Ok(Some(date_to_days(date)))
    })
}

fn make_timestamp(c: &Call) -> Result<ColumnarValue> {
    make_timestamp_as(c, false, false)
}

/// `make_timestamp` and its forms: NULL instead of an error for invalid
/// fields (`tolerate`), the local date and time itself (`ntz`).
fn make_timestamp_as(c: &Call, tolerate: bool, ntz: bool) -> Result<ColumnarValue> {
    let zone = if ntz { chrono_tz::UTC } else { c.time_zone() };
    let parts: Vec<_> = (0..5).map(|i| c.long(i)).collect::<Result<_>>()?;
    let seconds = c.double(5)?;
    let zones = if c.args.len() == 7 {
        Some(c.str(6)?)
    } else {
        None
    };
    timestamp_rows(c.len(), (!ntz).then(utc), |i| {
        let values: Option<Vec<i64>> = parts.iter().map(|p| p.get(i)).collect();
        let (Some(v), Some(sec)) = (values, seconds.get(i)) else {
            return Ok(None);
        };
        let invalid = || {
            df(FunctionError::InvalidParameter {
                function: "make_timestamp",
                parameter: "fields",
                reason: format!("{v:?} {sec} is not a valid timestamp"),
            })
        };
        let invalid = || {
            if tolerate {
                None
            } else {
                Some(invalid())
            }
        };
        let fail = |e: Option<DataFusionError>| -> Result<Option<i64>> {
            match e {
                Some(e) => Err(e),
                None => Ok(None),
            }
        };
        let whole = sec.trunc();
        let micros = ((sec - whole) * 1e6).round() as u32;
        // 60 seconds is the next minute, as Spark allows.
        let Some(date) = NaiveDate::from_ymd_opt(v[0] as i32, v[1] as u32, v[2] as u32) else {
            return fail(invalid());
        };
        let time = if whole == 60.0 {
            NaiveTime::from_hms_micro_opt(v[3] as u32, v[4] as u32, 0, 0)
                .map(|t| (t, Duration::minutes(1)))
        } else {
            NaiveTime::from_hms_micro_opt(v[3] as u32, v[4] as u32, whole as u32, micros)
                .map(|t| (t, Duration::zero()))
        };
        let Some(time) = time.filter(|_| (0.0..=60.0).contains(&sec)) else {
            return fail(invalid());
        };
        let local = date.and_time(time.0) + time.1;
        let tz = match zones.as_ref().and_then(|z| z.get(i)) {
            Some(name) => match super::udf::parse_zone(name) {
                Some(tz) => tz,
                None => return fail(invalid()),
            },
            None => zone,
        };
        Ok(instant_of(local, &tz))
    })
}

fn epoch_to_timestamp(c: &Call, per_unit: f64) -> Result<ColumnarValue> {
    let zone_name = Some(utc());
    match c.arg(0)?.data_type() {
        DataType::Float64 => {
            let v = c.double(0)?;
            // Cut to the microsecond, as Spark's `(d * 1e6).toLong`.
            timestamp_rows(c.len(), zone_name.clone(), |i| {
                Ok(v.get(i).map(|s| (s * per_unit).trunc() as i64))
            })
        }
        _ => {
            let v = c.long(0)?;
            let factor = per_unit as i64;
            timestamp_rows(c.len(), zone_name.clone(), |i| match v.get(i) {
                None => Ok(None),
                Some(n) => n.checked_mul(factor).map(Some).ok_or_else(|| {
                    df(FunctionError::ArithmeticOverflow {
                        operation: format!("{n} * {factor}"),
                        hint: "multiply",
                    })
                }),
            })
        }
    }
}

fn timestamp_to_epoch(c: &Call, per_unit: i64) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let values = Moment::new(c.arg(0)?)?;
    long_rows(c.len(), |i| {
        Ok(match values.get(i, &zone)? {
            None => None,
            Some(At::Time(_, Some(m))) => Some(m.div_euclid(per_unit)),
            Some(other) => instant_of(other.local(), &zone).map(|m| m.div_euclid(per_unit)),
        })
    })
}

fn date_from_unix_date(c: &Call) -> Result<ColumnarValue> {
    let days = c.long(0)?;
    date_rows(c.len(), |i| {
        Ok(days.get(i).and_then(|d| i32::try_from(d).ok()))
    })
}

fn current_timezone(c: &Call) -> Result<ColumnarValue> {
    Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(
        c.time_zone().name().to_string(),
    ))))
}

fn current_date(c: &Call) -> Result<ColumnarValue> {
    let today = chrono::Utc::now()
        .with_timezone(&c.time_zone())
        .date_naive();
    Ok(ColumnarValue::Scalar(ScalarValue::Date32(Some(
        date_to_days(today),
    ))))
}

fn current_timestamp(_: &Call) -> Result<ColumnarValue> {
    Ok(ColumnarValue::Scalar(ScalarValue::TimestampMicrosecond(
        Some(chrono::Utc::now().timestamp_micros()),
        Some(utc()),
    )))
}

fn convert_timezone(c: &Call) -> Result<ColumnarValue> {
    let zone = c.time_zone();
    let (sources, targets, value_at) = if c.args.len() == 3 {
        (Some(c.str(0)?), c.str(1)?, 2)
    } else {
        (None, c.str(0)?, 1)
    };
    let values = Moment::new(c.arg(value_at)?)?;
    let bad = |name: &str| {
        df(FunctionError::InvalidParameter {
            function: "convert_timezone",
            parameter: "timezone",
            reason: format!("unknown time zone {name}"),
        })
    };
    timestamp_rows(c.len(), None, |i| {
        let (Some(target), Some(at)) = (targets.get(i), values.get(i, &zone)?) else {
            return Ok(None);
        };
        let target = super::udf::parse_zone(target).ok_or_else(|| bad(target))?;
        let instant = match (&sources, at) {
            (None, At::Time(_, Some(m))) => Some(m),
            (Some(s), at) => {
                let Some(name) = s.get(i) else {
                    return Ok(None);
                };
                let source = super::udf::parse_zone(name).ok_or_else(|| bad(name))?;
                instant_of(at.local(), &source)
            }
            (None, at) => instant_of(at.local(), &zone),
        };
        Ok(instant
            .and_then(DateTime::from_timestamp_micros)
            .map(|utc| {
                utc.with_timezone(&target)
                    .naive_local()
                    .and_utc()
                    .timestamp_micros()
            }))
    })
}
