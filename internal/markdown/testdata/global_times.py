#!/usr/bin/env python3
"""Writes global_times.json: what Zulip 11's Timestamp pattern
(zerver/lib/markdown/__init__.py) makes of each <time:...> text below,
with python-dateutil 2.9.0 (Zulip 11's) and Zulip's common_timezones
(zerver/lib/timezone.py), on 2026-11-28 (the day a time without a date
is on; two-digit years are read around 2026).

    python3 internal/markdown/testdata/global_times.py

Each case is [text, datetime] with datetime the <time> element's
datetime attribute, or null where Zulip writes its timestamp-error
span, or "raises" where Zulip's rendering raises (an OverflowError or
an OSError from a timestamp beyond time_t or gmtime, which Timestamp
does not catch, so that Zulip refuses the message).
"""

import json
import os
from datetime import datetime, timezone

import dateutil.parser

COMMON_TIMEZONES = {
    "SST": -39600, "HST": -36000, "AKST": -32400, "HDT": -32400, "AKDT": -28800,
    "PST": -28800, "MST": -25200, "PDT": -25200, "CST": -21600, "MDT": -21600,
    "CDT": -18000, "EST": -18000, "AST": -14400, "EDT": -14400, "NST": -12600,
    "ADT": -10800, "NDT": -9000, "GMT": 0, "UTC": 0, "WET": 0, "BST": +3600,
    "CET": +3600, "MET": +3600, "WAT": +3600, "WEST": +3600, "CAT": +7200,
    "CEST": +7200, "EET": +7200, "MEST": +7200, "SAST": +7200, "EAT": +10800,
    "EEST": +10800, "IDT": +10800, "MSK": +10800, "PKT": +18000, "IST": +19800,
    "WIB": +25200, "AWST": +28800, "HKT": +28800, "WITA": +28800, "JST": +32400,
    "KST": +32400, "WIT": +32400, "ACST": +34200, "AEST": +36000, "ChST": +36000,
    "ACDT": +37800, "AEDT": +39600, "NZST": +43200, "NZDT": +46800,
}

TODAY = datetime(2026, 11, 28)

TEXTS = [
    "Jun 5th 2017, 10:30PM", "31 Dec 2017", "<alert(1)", "31 Dec 2017 5:30 am IST",
    "**hello world**", "1496701800", "", " ", "  \t", "\x00", "\x0010:30",
    "2017-06-05", "2017-06-05T22:30:00Z", "2017-06-05T22:30:00z", "2017-06-05T22:30:00+05:30",
    "2017-06-05T22:30:00-0800", "2017-06-05 22:30:00.123456", "2017-06-05 22:30:00.1234567",
    "2017-06-05 22:30:00,5", "June 5 2017", "5 June 2017", "Jun 5, 2017 10:30 PM",
    "10:30", "10:30 pm", "10:30pm", "10:30 p.m.", "10:30 a.m", "10pm", "10 pm", "10 PM EST",
    "noon", "tomorrow", "today", "Mon", "monday", "Monday 10am", "Sunday", "Tues",
    "5th of June 2017", "June of 2017", "June of 17", "June of x", "2017/06/05", "06/05/2017",
    "05/06/17", "17-06-05", "20170605", "20170605T2230", "201706052230", "20170605223000",
    "170605", "223000", "223000.5", "1496701800.5", "1496701800.0000005", "-1", "0", "00",
    "1e9", "1E9", "1.5e9", "inf", "-inf", "Infinity", "nan", "NaN", "1_000", "1__000",
    "_1000", " 12 ", "12", "1", "31", "32", "99", "100", "999", "1000", "2017", "10000",
    "Jun", "June 2017", "2017 June", "12:30:45.5", "12:30:45,5", "12:30.5", "12h30m",
    "12h 30m", "12 h 30 m", "3 hours", "5 minutes", "30 s", "h 5", "10 h", "1.5 h",
    "5:30 am IST", "5:30 PST", "5:30 XYZ", "5:30 ABCDEF", "5:30 ChST", "5:30 UTC",
    "5:30Z", "5:30 z", "5:30 GMT+3", "5:30 UTC-2", "5:30 GMT-03:00", "10:00 +0530",
    "10:00 -05", "10:00+05:30", "10:00 +05:30 (IST)", "10:00 +05:30 (India)", "10:00 +123",
    "10:00 EST-5", "10:00 EST+5", "Feb 29 2016", "Feb 29 2017", "Feb 30", "Feb 31 2016",
    "2017-13-01", "2017-00-01", "2017-01-00", "25:00", "24:00", "10:61", "10:59:60",
    "a", "am", "pm", "10 am am", "13 pm", "0 am", "12 am", "12 pm", "12:00 am", "a 10",
    "Sept 3", "Sep. 3, 2017", "3.6.2017", "3.6.17", "2017.06.05", "4:30:21.447",
    "4:30:21,447", "12,5", "12,", "1,5", "Jan-03-2017", "03-Jan-2017", "2017-Jan-03",
    "99-Jan-01", "01-99-Jan", "01-Jan-99", "Jan-2003-25", "03/Jan/2017", "2017-Jan",
    "T", "t10", "2017-06-05t10:00", "2017-06-05T10", "\u0661\u0662:\u0663\u0660",
    "\u00b2", "12\u00b2", "10:30 at the park", "on Monday", "the 5th",
    "Monday, June 5, 2017 at 10:30 PM EDT", "1 2 3 4", "12 13 14", "13 12 11", "2017 2018",
    "Jun Jul", "10:30\tpm", "10.30", "10.5", "0001-01-01 00:00 +01:00",
    "9999-12-31 23:00 -02:00", "0001-01-01", "9999-12-31", "0000-01-01", "-5", "+5",
    "5-", "5/", "5.", ".5", "5 .", "10:00 -", "10:00 +", "10:00 + 05", "GMT", "UTC 10:00",
    "10:00 UTC+1", "10:00 GMT+1 (CET)", "Jan 1 2000 00:00 NZDT", "Dec 31 9999 23:00 SST",
    "Jan 1 0001 00:30 NZDT", "1/1/1 1:1:1", "2017-06-05 10:00 AM PST", "June 5th",
    "June 31st", "Feb", "31", "5 of June", "at 10", "and", "ad", "m", "st", "10th",
    "10 th", "2nd Tuesday", "tuesday june 6", "10.30.2017", "10.30.17.5", "a.m.",
    "10 a.m. EST", "\u00e9t\u00e9", "\u4eca\u5929", "2017\u5e746\u67085\u65e5",
    "1496701800 UTC", "+1496701800", "-1496701800", "1496701800 ", "253402300799",
    "253402300800", "253402300799.9999999", "-62135596800", "-62135596801", "1e20", "1e400", "1e15", "1e17", "-1e17", "9.3e18",
    "2147483648", "99999999999999999999", "12345678901234567890123",
    "10:30 PM IST+1", "May 5", "mAy 5", "MAY 5 2017", "Dec. 25", "dec.25", "25.dec",
    "25-12", "12-25", "25/12/2017", "2017-12", "12-2017", "1-2", "13-2", "32-2",
    "5:30:15 pm", "5:30:15.25 PM UTC", "12:60", "1:2:3:4", "10:", ":10", "10::30",
    # Found by comparing 110,000 random texts with dateutil's reading:
    # offsets of a day or more, and a long number of seconds that a
    # later minute overwrites.
    "-05:00+59", "-05:00-99", "05:5-99", "201706051330+31", "  -05:00-05:00\u0661\u066205T",
    " 052412,5-05:003220170605", "m\u0661\u066214967018001.5and5m",
]


def zulip_time(text):
    try:
        timestamp = dateutil.parser.parse(text, tzinfos=COMMON_TIMEZONES, default=TODAY)
    except (ValueError, OverflowError):
        try:
            timestamp = datetime.fromtimestamp(float(text), tz=timezone.utc)
        except ValueError:
            timestamp = None
    if not timestamp:
        return None
    if timestamp.tzinfo:
        try:
            timestamp = timestamp.astimezone(timezone.utc)
        except (ValueError, OverflowError):
            return None
    else:
        timestamp = timestamp.replace(tzinfo=timezone.utc)
    return timestamp.isoformat().replace("+00:00", "Z")


def main():
    info = dateutil.parser._parser.DEFAULTPARSER.info
    info._year, info._century = TODAY.year, TODAY.year // 100 * 100
    cases = []
    for text in TEXTS:
        try:
            cases.append([text, zulip_time(text)])
        except Exception:  # OverflowError, OSError: Timestamp lets them through
            cases.append([text, "raises"])
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "global_times.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"source": "global_times.py (python-dateutil %s)" % dateutil.__version__,
                   "today": TODAY.date().isoformat(), "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
