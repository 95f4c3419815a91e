package markdown

// dateutil's _ymd (dateutil.go): the numbers a text gives for the year,
// the month and the day, and which is which.

import "time"

// dateYMD is dateutil's _ymd: up to three numbers, with which of them
// are known to be the year, the month and the day.
type dateYMD struct {
	vals                      []int
	centurySpecified          bool
	ystridx, mstridx, dstridx int // -1: unknown
}

// appendStr is _ymd.append of a string (digits).
func (y *dateYMD) appendStr(s string, label byte) bool {
	n, ok := atoi(s)
	if !ok {
		return false
	}
	if len(s) > 2 {
		y.centurySpecified = true
		label = 'Y'
	}
	return y.add(n, label)
}

// appendNum is _ymd.append of a number.
func (y *dateYMD) appendNum(v float64, whole int, label byte) bool {
	if v > 100 {
		y.centurySpecified = true
		label = 'Y'
	}
	return y.add(whole, label)
}

func (y *dateYMD) add(n int, label byte) bool {
	y.vals = append(y.vals, n)
	idx := len(y.vals) - 1
	switch label {
	case 'M':
		if y.mstridx >= 0 {
			return false
		}
		y.mstridx = idx
	case 'D':
		if y.dstridx >= 0 {
			return false
		}
		y.dstridx = idx
	case 'Y':
		if y.ystridx >= 0 {
			return false
		}
		y.ystridx = idx
	}
	return true
}

func daysIn(year, month int) int {
	if month < 1 || month > 12 {
		return 0
	}
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func (y *dateYMD) couldBeDay(v float64) bool {
	switch {
	case y.dstridx >= 0:
		return false
	case y.mstridx < 0:
		return 1 <= v && v <= 31
	case y.ystridx < 0:
		return 1 <= v && v <= float64(daysIn(2000, y.vals[y.mstridx]))
	default:
		year := y.vals[y.ystridx]
		if year < 1 || year > 9999 {
			return false // monthrange's ValueError ends the parse the same way
		}
		return 1 <= v && v <= float64(daysIn(year, y.vals[y.mstridx]))
	}
}

// resolve is _ymd.resolve_ymd(yearfirst=False, dayfirst=False).
func (y *dateYMD) resolve() (year, month, day optInt, ok bool) {
	n := len(y.vals)
	strids := map[byte]int{}
	if y.ystridx >= 0 {
		strids['y'] = y.ystridx
	}
	if y.mstridx >= 0 {
		strids['m'] = y.mstridx
	}
	if y.dstridx >= 0 {
		strids['d'] = y.dstridx
	}
	if (n == len(strids) && n > 0) || (n == 3 && len(strids) == 2) {
		if n == 3 && len(strids) == 2 {
			used := map[int]bool{}
			for _, v := range strids {
				used[v] = true
			}
			for _, k := range []byte{'y', 'm', 'd'} {
				if _, has := strids[k]; !has {
					for i := 0; i < 3; i++ {
						if !used[i] {
							strids[k] = i
						}
					}
				}
			}
		}
		if i, has := strids['y']; has {
			year = some(y.vals[i])
		}
		if i, has := strids['m']; has {
			month = some(y.vals[i])
		}
		if i, has := strids['d']; has {
			day = some(y.vals[i])
		}
		return year, month, day, true
	}
	v := y.vals
	switch {
	case n > 3:
		return year, month, day, false
	case n == 1 || (y.mstridx >= 0 && n == 2):
		var other int
		if y.mstridx >= 0 {
			month = some(v[y.mstridx])
			other = v[(y.mstridx+n-1)%n] // self[mstridx-1]
		} else {
			other = v[0]
		}
		if n > 1 || y.mstridx < 0 {
			if other > 31 {
				year = some(other)
			} else {
				day = some(other)
			}
		}
	case n == 2:
		switch {
		case v[0] > 31:
			year, month = some(v[0]), some(v[1])
		case v[1] > 31:
			month, year = some(v[0]), some(v[1])
		default:
			month, day = some(v[0]), some(v[1])
		}
	case n == 3:
		switch y.mstridx {
		case 0:
			if v[1] > 31 {
				month, year, day = some(v[0]), some(v[1]), some(v[2])
			} else {
				month, day, year = some(v[0]), some(v[1]), some(v[2])
			}
		case 1:
			if v[0] > 31 {
				year, month, day = some(v[0]), some(v[1]), some(v[2])
			} else {
				day, month, year = some(v[0]), some(v[1]), some(v[2])
			}
		case 2:
			if v[1] > 31 {
				day, year, month = some(v[0]), some(v[1]), some(v[2])
			} else {
				year, day, month = some(v[0]), some(v[1]), some(v[2])
			}
		default:
			switch {
			case v[0] > 31 || y.ystridx == 0:
				year, month, day = some(v[0]), some(v[1]), some(v[2])
			case v[0] > 12:
				day, month, year = some(v[0]), some(v[1]), some(v[2])
			default:
				month, day, year = some(v[0]), some(v[1]), some(v[2])
			}
		}
	}
	return year, month, day, true
}
