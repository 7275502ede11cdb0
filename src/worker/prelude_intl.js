/*
 * prelude_intl.js - a deliberate minimal Intl: en-US only, UTC only (docs/javascript.md).
 *
 * Intl.NumberFormat (decimal, percent, currency; fraction digits, integer digits, grouping,
 * sign display) and Intl.DateTimeFormat (dateStyle/timeStyle, the weekday/year/month/day/hour/
 * minute/second options, hour12/hourCycle), with format and resolvedOptions, and the
 * toLocaleString family of Number, BigInt and Date routed through them. The output is Node's
 * (ICU, en-US) byte for byte for everything supported; anything else - another locale, another
 * time zone, an option outside the subset - throws a RangeError that names it. Nothing depends
 * on the host: no locale, no time zone, no clock but the run's.
 *
 * Numbers are formatted from their shortest round-trip decimal (as ICU does), rounded half away
 * from zero in decimal, so 1.005 with two fraction digits is "1.01". Date patterns come from
 * tables generated from Node's ICU by tests/compat/intl_tables.mjs. Same rules as prelude.js:
 * everything is captured before guest code exists, and nothing but `Intl` becomes a global.
 */
'use strict';
'use strip';
(function (native) {
    void native;
    const ObjectCtor = Object;
    const { defineProperty, getOwnPropertyDescriptor } = Object;
    const call = Function.prototype.call.bind(Function.prototype.call);
    const MathFloor = Math.floor;
    const MathAbs = Math.abs;
    const BigIntCtor = BigInt;
    const WeakMapCtor = WeakMap;
    const { get: wmGet, set: wmSet } = WeakMap.prototype;
    const { toLowerCase, toUpperCase, slice: strSlice, padStart, replace: strReplace } =
            String.prototype;
    const RegExpExec = RegExp.prototype.exec;
    const RegExpTest = RegExp.prototype.test;
    const numberValueOf = Number.prototype.valueOf;
    const bigintValueOf = BigInt.prototype.valueOf;
    const DateCtor = Date;
    const dateNow = Date.now;
    const DateProto = Date.prototype;
    const { getTime: dateGetTime, getUTCFullYear, getUTCMonth, getUTCDate, getUTCDay, getUTCHours,
        getUTCMinutes, getUTCSeconds } = DateProto;
    const SymbolToPrimitive = Symbol.toPrimitive;

    const lower = (s) => call(toLowerCase, s);
    const test = (re, s) => call(RegExpTest, re, s);

    function isObject(v) {
        return (typeof v === 'object' && v !== null) || typeof v === 'function';
    }

    function install(target, methods) {
        for (const k of Reflect.ownKeys(methods)) {
            const d = getOwnPropertyDescriptor(methods, k);
            if (d.get) {
                defineProperty(target, k, { get: d.get, enumerable: false, configurable: true });
            } else {
                defineProperty(target, k, { value: d.value, writable: true, enumerable: false,
                    configurable: true });
            }
        }
    }

    /* ---------------------------------------------------------------- locales and options */

    /* The requested locale: en-US (the default) or en. Anything else throws a RangeError naming
     * it; a tag that is not a language tag at all throws the standard's RangeError. */
    function localeList(locales) {
        if (locales === undefined) {
            return [];
        }
        if (typeof locales === 'string') {
            return [locales];
        }
        const O = ObjectCtor(locales);
        const len = O.length >>> 0;
        const out = [];
        for (let k = 0; k < len; k++) {
            if (k in O) {
                const v = O[k];
                if (typeof v !== 'string' && !isObject(v)) {
                    throw new TypeError('Intl: a locale must be a string or an object');
                }
                out[out.length] = `${v}`;
            }
        }
        return out;
    }

    const languageTag = /^[a-z]{2,3}(-[a-z]{4})?(-([a-z]{2}|[0-9]{3}))?(-([a-z0-9]{5,8}|[0-9][a-z0-9]{3}))*(-[a-wyz0-9](-[a-z0-9]{2,8})+)*(-x(-[a-z0-9]{1,8})+)?$/i;

    function canonicalLocale(tag) {
        if (!test(languageTag, tag)) {
            throw new RangeError(`Incorrect locale information provided: '${tag}'`);
        }
        const l = lower(tag);
        return l === 'en-us' ? 'en-US' : l === 'en' ? 'en' : undefined;
    }

    function resolveLocale(locales, what) {
        const list = localeList(locales);
        if (list.length === 0) {
            return 'en-US';
        }
        const c = canonicalLocale(list[0]);
        if (c === undefined) {
            throw new RangeError(`${what}: locale '${list[0]}' is not supported (only en-US)`);
        }
        return c;
    }

    function supportedLocalesOf(locales) {
        const out = [];
        for (const tag of localeList(locales)) {
            const c = canonicalLocale(tag);
            if (c !== undefined && !out.includes(c)) {
                out[out.length] = c;
            }
        }
        return out;
    }

    function toOptions(options) {
        if (options === undefined) {
            return { __proto__: null };
        }
        if (options === null) {
            throw new TypeError('Intl: the options argument is null');
        }
        return ObjectCtor(options);
    }

    /* GetOption: undefined stays undefined; values outside `allowed` are a RangeError. */
    function getOption(options, prop, type, allowed, what) {
        const v = options[prop];
        if (v === undefined) {
            return undefined;
        }
        if (type === 'boolean') {
            return !!v;
        }
        const s = `${v}`;
        if (allowed && !allowed.includes(s)) {
            throw new RangeError(`Value ${s} out of range for ${what} options property ${prop}`);
        }
        return s;
    }

    /* An option whose valid values airlock does not all support. */
    function onlyOption(options, prop, allowed, supported, what) {
        const v = getOption(options, prop, 'string', allowed, what);
        if (v !== undefined && !supported.includes(v)) {
            throw new RangeError(`${what}: option ${prop} '${v}' is not supported`);
        }
        return v;
    }

    function getNumberOption(options, prop, min, max, fallback) {
        const v = options[prop];
        if (v === undefined) {
            return fallback;
        }
        const n = +v;
        if (n !== n || n < min || n > max) {
            throw new RangeError(`${prop} value is out of range.`);
        }
        return MathFloor(n);
    }

    /* ---------------------------------------------------------------- Intl.NumberFormat */

    const CURRENCIES = 'AFN::0:؋;ALL::0:;AMD:::֏;AOA:::Kz;ARS:::$;AUD:A$::$;AZN:::₼;BAM:::KM;BBD:::$;BDT:::৳;BHD::3:;BIF::0:;BMD:::$;BND:::$;BOB:::Bs;BRL:R$::;BSD:::$;BWP:::P;BZD:::$;CAD:CA$::$;CLP::0:$;CNY:CN¥::¥;COP::0:$;CRC:::₡;CUC:::$;CUP:::$;CZK:::Kč;DJF::0:;DKK:::kr;DOP:::$;EGP:::E£;EUR:€::;FJD:::$;FKP:::£;GBP:£::;GEL:::₾;GHS:::GH₵;GIP:::£;GNF::0:FG;GTQ:::Q;GYD:::$;HKD:HK$::$;HNL:::L;HRK:::kn;HUF::0:Ft;IDR::0:Rp;ILS:₪::;INR:₹::;IQD::0:;IRR::0:;ISK::0:kr;JMD:::$;JOD::3:;JPY:¥:0:;KGS:::⃀;KHR:::៛;KMF::0:CF;KPW::0:₩;KRW:₩:0:;KWD::3:;KYD:::$;KZT:::₸;LAK::0:₭;LBP::0:L£;LKR:::Rs;LRD:::$;LYD::3:;MGA::0:Ar;MMK::0:K;MNT:::₮;MUR:::Rs;MXN:MX$::$;MYR:::RM;NAD:::$;NGN:::₦;NIO:::C$;NOK:::kr;NPR:::Rs;NZD:NZ$::$;OMR::3:;PHP:₱::;PKR::0:Rs;PLN:::zł;PYG::0:₲;RON:::lei;RUB:::₽;RWF::0:RF;SBD:::$;SEK:::kr;SGD:::$;SHP:::£;SLL::0:;SOS::0:;SRD:::$;SSP:::£;STN:::Db;SYP::0:£;THB:::฿;TND::3:;TOP:::T$;TRY:::₺;TTD:::$;TWD:NT$::$;UAH:::₴;UGX::0:;USD:$::;UYU:::$;VND:₫:0:;VUV::0:;XAF:FCFA:0:;XCD:EC$::$;XCG:Cg.::;XOF:F CFA:0:;XPF:CFPF:0:;YER::0:;ZAR:::R;ZMW:::ZK';
    /* Parsed on first use, so a run that never formats money does not pay for it. */
    let currencyTable;
    function currencyInfo(code) {
        if (!currencyTable) {
            currencyTable = { __proto__: null };
            for (const entry of CURRENCIES.split(';')) {
                const [c, symbol, digits, narrow] = entry.split(':');
                currencyTable[c] = { symbol: symbol || c, digits: digits === '' ? 2 : +digits,
                    narrow: narrow || symbol || c };
            }
        }
        return currencyTable[code];
    }
    const symbolEnd = /[\p{S}\p{Z}]$/u;

    /* A decimal: digits (no leading or trailing zeros; '' for zero), the position of the point
     * relative to the first digit, and the sign. */
    function decimalOf(digits, point, negative) {
        let i = 0;
        while (i < digits.length && digits[i] === '0') {
            i++;
        }
        let j = digits.length;
        while (j > i && digits[j - 1] === '0') {
            j--;
        }
        return { digits: call(strSlice, digits, i, j), point: i === j ? 0 : point - i, negative,
            special: '' };
    }

    const decimalLiteral = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

    /* From a string (ToIntlMathematicalValue): exact, any precision; NaN when not a number. */
    function decimalOfString(str) {
        const s = call(strReplace, str, /^[\s\uFEFF\u2028\u2029]+|[\s\uFEFF\u2028\u2029]+$/g, '');
        if (s === '') {
            return decimalOf('', 0, false);
        }
        const inf = /^([+-]?)Infinity$/.exec(s);
        if (inf) {
            return { digits: '', point: 0, negative: inf[1] === '-', special: 'inf' };
        }
        if (test(/^0[xXoObB]/, s)) {
            try {
                const b = BigIntCtor(s);
                return decimalOf(`${b}`, `${b}`.length, false);
            } catch (e) {
                return { digits: '', point: 0, negative: false, special: 'nan' };
            }
        }
        const m = call(RegExpExec, decimalLiteral, s);
        if (!m || (m[2] === '' && (m[3] === undefined || m[3] === ''))) {
            return { digits: '', point: 0, negative: false, special: 'nan' };
        }
        const frac = m[3] || '';
        const exp = m[4] ? +m[4] : 0;
        return decimalOf(m[2] + frac, m[2].length + exp, m[1] === '-');
    }

    function decimalOfNumber(x) {
        if (x !== x) {
            return { digits: '', point: 0, negative: false, special: 'nan' };
        }
        const negative = x < 0 || (x === 0 && 1 / x < 0);
        if (x === Infinity || x === -Infinity) {
            return { digits: '', point: 0, negative, special: 'inf' };
        }
        return decimalOfString(`${MathAbs(x)}`).special ? decimalOf('', 0, negative)
                : { ...decimalOfString(`${MathAbs(x)}`), negative };
    }

    function toPrimitiveNumber(v) {
        if (!isObject(v)) {
            return v;
        }
        const exotic = v[SymbolToPrimitive];
        if (exotic !== undefined && exotic !== null) {
            const r = call(exotic, v, 'number');
            if (isObject(r)) {
                throw new TypeError('Cannot convert object to primitive value');
            }
            return r;
        }
        for (const k of ['valueOf', 'toString']) {
            const f = v[k];
            if (typeof f === 'function') {
                const r = call(f, v);
                if (!isObject(r)) {
                    return r;
                }
            }
        }
        throw new TypeError('Cannot convert object to primitive value');
    }

    function toIntlMathematicalValue(value) {
        const p = toPrimitiveNumber(value);
        if (typeof p === 'bigint') {
            const s = `${p}`;
            const neg = s[0] === '-';
            const abs = neg ? call(strSlice, s, 1) : s;
            return decimalOf(abs, abs.length, neg);
        }
        if (typeof p === 'string') {
            return decimalOfString(p);
        }
        return decimalOfNumber(+p);
    }

    /* Rounds to at most `maxFrac` fraction digits, half away from zero. */
    function roundDecimal(d, maxFrac) {
        const keep = d.point + maxFrac;
        if (d.digits.length <= keep) {
            return d;
        }
        if (keep < 0) {
            return decimalOf('', 0, d.negative);
        }
        let digits = call(strSlice, d.digits, 0, keep);
        let point = d.point;
        if (d.digits[keep] >= '5') {
            let i = digits.length - 1;
            let carried = '';
            while (i >= 0 && digits[i] === '9') {
                carried += '0';
                i--;
            }
            if (i < 0) {
                digits = '1' + carried;
                point++;
            } else {
                digits = call(strSlice, digits, 0, i) + String.fromCharCode(digits.charCodeAt(i) + 1) +
                        carried;
            }
        }
        return decimalOf(digits, point, d.negative);
    }

    function groupDigits(int, mode) {
        if (mode === false || int.length < (mode === 'min2' ? 5 : 4)) {
            return int;
        }
        let out = '';
        let i = int.length % 3 || 3;
        out = call(strSlice, int, 0, i);
        for (; i < int.length; i += 3) {
            out += ',' + call(strSlice, int, i, i + 3);
        }
        return out;
    }

    function formatNumber(nf, value) {
        let d = toIntlMathematicalValue(value);
        let body;
        let isZero = false;
        if (d.special === 'nan') {
            body = 'NaN';
        } else if (d.special === 'inf') {
            body = '\u221e';
        } else {
            if (nf.style === 'percent') {
                d = { ...d, point: d.digits === '' ? 0 : d.point + 2 };
            }
            d = roundDecimal(d, nf.maxFrac);
            isZero = d.digits === '';
            let int = d.point <= 0 ? '' : call(strSlice, d.digits, 0, d.point) +
                    '0'.repeat(MathAbs(Math.max(0, d.point - d.digits.length)));
            let frac = d.point >= 0 ? call(strSlice, d.digits, d.point)
                    : '0'.repeat(-d.point) + d.digits;
            int = call(padStart, int, nf.minInt, '0');
            if (nf.trailingZeroDisplay === 'stripIfInteger' && frac === '') {
                /* no minimum fraction digits for an integer */
            } else if (frac.length < nf.minFrac) {
                frac += '0'.repeat(nf.minFrac - frac.length);
            }
            body = groupDigits(int, nf.useGrouping) + (frac ? '.' + frac : '');
        }
        const negative = d.negative && d.special !== 'nan';
        let sign = '';
        switch (nf.signDisplay) {
        case 'auto':
            sign = negative ? '-' : '';
            break;
        case 'always':
            sign = negative ? '-' : '+';
            break;
        case 'exceptZero':
            sign = isZero || d.special === 'nan' ? '' : negative ? '-' : '+';
            break;
        case 'negative':
            sign = negative && !isZero ? '-' : '';
            break;
        default:
            sign = '';
        }
        if (nf.style === 'percent') {
            return sign + body + '%';
        }
        if (nf.style !== 'currency') {
            return sign + body;
        }
        const info = currencyInfo(nf.currency);
        const symbol = nf.currencyDisplay === 'code' ? nf.currency
                : nf.currencyDisplay === 'narrowSymbol' ? (info ? info.narrow : nf.currency)
                : (info ? info.symbol : nf.currency);
        const spaced = !test(symbolEnd, symbol) && body[0] >= '0' && body[0] <= '9';
        const money = symbol + (spaced ? '\u00a0' : '') + body;
        if (nf.currencySign === 'accounting' && sign === '-') {
            return '(' + money + ')';
        }
        return sign + money;
    }

    const nfSlots = new WeakMapCtor();
    const NF = 'Intl.NumberFormat';

    function NumberFormat(locales = undefined, options = undefined) {
        if (new.target === undefined) {
            return new NumberFormat(locales, options);
        }
        const nf = { __proto__: null };
        nf.locale = resolveLocale(locales, NF);
        const o = toOptions(options);
        getOption(o, 'localeMatcher', 'string', ['lookup', 'best fit'], NF);
        onlyOption(o, 'numberingSystem', undefined, ['latn'], NF);
        nf.style = onlyOption(o, 'style', ['decimal', 'percent', 'currency', 'unit'],
                ['decimal', 'percent', 'currency'], NF) || 'decimal';
        let currency = getOption(o, 'currency', 'string', undefined, NF);
        if (currency !== undefined) {
            if (!test(/^[A-Za-z]{3}$/, currency)) {
                throw new RangeError(`Invalid currency code : ${currency}`);
            }
            currency = call(toUpperCase, currency);
        }
        nf.currencyDisplay = onlyOption(o, 'currencyDisplay',
                ['code', 'symbol', 'narrowSymbol', 'name'], ['code', 'symbol', 'narrowSymbol'],
                NF) || 'symbol';
        nf.currencySign = getOption(o, 'currencySign', 'string', ['standard', 'accounting'], NF) ||
                'standard';
        onlyOption(o, 'unit', undefined, [], NF);
        onlyOption(o, 'unitDisplay', ['short', 'narrow', 'long'], [], NF);
        if (nf.style === 'currency') {
            if (currency === undefined) {
                throw new TypeError('Currency code is required with currency style.');
            }
            nf.currency = currency;
        }
        onlyOption(o, 'notation', ['standard', 'scientific', 'engineering', 'compact'],
                ['standard'], NF);
        const cDigits = nf.style === 'currency'
                ? (currencyInfo(currency) ? currencyInfo(currency).digits : 2) : 0;
        nf.minInt = getNumberOption(o, 'minimumIntegerDigits', 1, 21, 1);
        const mnfd = o.minimumFractionDigits;
        const mxfd = o.maximumFractionDigits;
        onlyOption(o, 'minimumSignificantDigits', undefined, [], NF);
        onlyOption(o, 'maximumSignificantDigits', undefined, [], NF);
        const increment = o.roundingIncrement;
        if (increment !== undefined && +increment !== 1) {
            throw new RangeError(`${NF}: option roundingIncrement '${increment}' is not supported`);
        }
        onlyOption(o, 'roundingMode', ['ceil', 'floor', 'expand', 'trunc', 'halfCeil',
            'halfFloor', 'halfExpand', 'halfTrunc', 'halfEven'], ['halfExpand'], NF);
        onlyOption(o, 'roundingPriority', ['auto', 'morePrecision', 'lessPrecision'], ['auto'],
                NF);
        nf.trailingZeroDisplay = getOption(o, 'trailingZeroDisplay', 'string',
                ['auto', 'stripIfInteger'], NF) || 'auto';
        const mnfdDefault = cDigits;
        const mxfdDefault = nf.style === 'currency' ? cDigits : nf.style === 'percent' ? 0 : 3;
        let minFrac = mnfd === undefined ? undefined : getNumberOption(o, 'minimumFractionDigits',
                0, 100, 0);
        let maxFrac = mxfd === undefined ? undefined : getNumberOption(o, 'maximumFractionDigits',
                0, 100, 0);
        if (minFrac === undefined && maxFrac === undefined) {
            minFrac = mnfdDefault;
            maxFrac = Math.max(mxfdDefault, minFrac);
        } else if (maxFrac === undefined) {
            maxFrac = Math.max(mxfdDefault, minFrac);
        } else if (minFrac === undefined) {
            minFrac = Math.min(mnfdDefault, maxFrac);
        } else if (minFrac > maxFrac) {
            throw new RangeError('maximumFractionDigits value is out of range.');
        }
        nf.minFrac = minFrac;
        nf.maxFrac = maxFrac;
        onlyOption(o, 'compactDisplay', ['short', 'long'], ['short', 'long'], NF);
        const grouping = o.useGrouping;
        if (grouping === undefined || grouping === 'auto' || grouping === true ||
            grouping === 'always') {
            nf.useGrouping = grouping === true || grouping === 'always' ? 'always' : 'auto';
        } else if (grouping === 'min2') {
            nf.useGrouping = 'min2';
        } else if (grouping === false || grouping === null || grouping === 0 || grouping === '' ||
                   grouping === 'false') {
            nf.useGrouping = grouping === 'false' ? 'auto' : false;
        } else {
            throw new RangeError(`Value ${grouping} out of range for ${NF} options property ` +
                                 'useGrouping');
        }
        nf.signDisplay = getOption(o, 'signDisplay', 'string',
                ['auto', 'never', 'always', 'exceptZero', 'negative'], NF) || 'auto';
        nf.bound = undefined;
        call(wmSet, nfSlots, this, nf);
    }

    function nfSlot(v, method) {
        const nf = isObject(v) ? call(wmGet, nfSlots, v) : undefined;
        if (!nf) {
            throw new TypeError(`Method ${NF}.prototype.${method} called on incompatible receiver`);
        }
        return nf;
    }

    install(NumberFormat, {
        supportedLocalesOf(locales) {
            return supportedLocalesOf(locales);
        },
    });
    defineProperty(NumberFormat, 'prototype', { writable: false });
    install(NumberFormat.prototype, {
        get format() {
            const nf = nfSlot(this, 'format');
            if (!nf.bound) {
                nf.bound = (value) => formatNumber(nf, value);
            }
            return nf.bound;
        },
        resolvedOptions() {
            const nf = nfSlot(this, 'resolvedOptions');
            const r = { locale: nf.locale, numberingSystem: 'latn', style: nf.style };
            if (nf.style === 'currency') {
                r.currency = nf.currency;
                r.currencyDisplay = nf.currencyDisplay;
                r.currencySign = nf.currencySign;
            }
            r.minimumIntegerDigits = nf.minInt;
            r.minimumFractionDigits = nf.minFrac;
            r.maximumFractionDigits = nf.maxFrac;
            r.useGrouping = nf.useGrouping;
            r.notation = 'standard';
            r.signDisplay = nf.signDisplay;
            r.roundingMode = 'halfExpand';
            r.roundingIncrement = 1;
            r.trailingZeroDisplay = nf.trailingZeroDisplay;
            r.roundingPriority = 'auto';
            return r;
        },
    });
    defineProperty(NumberFormat.prototype, Symbol.toStringTag, { value: NF, configurable: true });

    /* ---------------------------------------------------------------- Intl.DateTimeFormat */

    /* The pattern tables are built on first use (a run that formats no date does not pay). */
    let DATE;
    let TIME;
    function loadTables() {
        if (DATE) {
            return;
        }
        /* generated by tests/compat/intl_tables.mjs: begin */
        DATE = [[[["","{d}","{dd}"],["{M}","{M}/{d}","{M}/{dd}"],["{MM}","{MM}/{d}","{MM}/{dd}"],["{MMMM}","{MMMM} {d}","{MMMM} {dd}"],["{MMM}","{MMM} {d}","{MMM} {dd}"],["{MMMMM}","{MMMMM} {d}","{MMMMM} {dd}"]],[["{y}","{y} (day: {d})","{y} (day: {dd})"],["{M}/{y}","{M}/{d}/{y}","{M}/{dd}/{y}"],["{MM}/{y}","{MM}/{d}/{y}","{MM}/{dd}/{y}"],["{MMMM} {y}","{MMMM} {d}, {y}","{MMMM} {dd}, {y}"],["{MMM} {y}","{MMM} {d}, {y}","{MMM} {dd}, {y}"],["{MMMMM} {y}","{MMMMM} {d}, {y}","{MMMMM} {dd}, {y}"]],[["{yy}","{d} {yy}","{yy} (day: {dd})"],["{M}/{yy}","{M}/{d}/{yy}","{M}/{dd}/{yy}"],["{MM}/{yy}","{MM}/{d}/{yy}","{MM}/{dd}/{yy}"],["{MMMM} {yy}","{MMMM} {d}, {yy}","{MMMM} {dd}, {yy}"],["{MMM} {yy}","{MMM} {d}, {yy}","{MMM} {dd}, {yy}"],["{MMMMM} {yy}","{MMMMM} {d}, {yy}","{MMMMM} {dd}, {yy}"]]],[[["{EEEE}","{d} {EEEE}","{dd} {EEEE}"],["{M} {EEEE}","{EEEE}, {M}/{d}","{EEEE}, {M}/{dd}"],["{MM} {EEEE}","{EEEE}, {MM}/{d}","{EEEE}, {MM}/{dd}"],["{MMMM} {EEEE}","{EEEE}, {MMMM} {d}","{EEEE}, {MMMM} {dd}"],["{MMM} {EEEE}","{EEEE}, {MMM} {d}","{EEEE}, {MMM} {dd}"],["{EEEE} (month: {MMMMM})","{EEEE}, {MMMMM} {d}","{EEEE}, {MMMMM} {dd}"]],[["{y} {EEEE}","{d} {EEEE} {y}","{dd} {EEEE} {y}"],["{M}/{y} {EEEE}","{EEEE}, {M}/{d}/{y}","{EEEE}, {M}/{dd}/{y}"],["{MM}/{y} {EEEE}","{EEEE}, {MM}/{d}/{y}","{EEEE}, {MM}/{dd}/{y}"],["{MMMM} {y} {EEEE}","{EEEE}, {MMMM} {d}, {y}","{EEEE}, {MMMM} {dd}, {y}"],["{MMM} {y} {EEEE}","{EEEE}, {MMM} {d}, {y}","{EEEE}, {MMM} {dd}, {y}"],["{MMMMM} {y} {EEEE}","{EEEE}, {MMMMM} {d}, {y}","{EEEE}, {MMMMM} {dd}, {y}"]],[["{yy} {EEEE}","{d} {EEEE} {yy}","{dd} {EEEE} {yy}"],["{M}/{yy} {EEEE}","{EEEE}, {M}/{d}/{yy}","{EEEE}, {M}/{dd}/{yy}"],["{MM}/{yy} {EEEE}","{EEEE}, {MM}/{d}/{yy}","{EEEE}, {MM}/{dd}/{yy}"],["{MMMM} {yy} {EEEE}","{EEEE}, {MMMM} {d}, {yy}","{EEEE}, {MMMM} {dd}, {yy}"],["{MMM} {yy} {EEEE}","{EEEE}, {MMM} {d}, {yy}","{EEEE}, {MMM} {dd}, {yy}"],["{MMMMM} {yy} {EEEE}","{EEEE}, {MMMMM} {d}, {yy}","{EEEE}, {MMMMM} {dd}, {yy}"]]],[[["{EEE}","{d} {EEE}","{dd} {EEE}"],["{M} {EEE}","{EEE}, {M}/{d}","{EEE}, {M}/{dd}"],["{EEE} (month: {MM})","{EEE}, {MM}/{d}","{EEE}, {MM}/{dd}"],["{EEE} (month: {MMMM})","{EEE}, {MMMM} {d}","{EEE}, {MMMM} {dd}"],["{MMM} {EEE}","{EEE}, {MMM} {d}","{EEE}, {MMM} {dd}"],["{EEE} (month: {MMMMM})","{EEE}, {MMMMM} {d}","{EEE}, {MMMMM} {dd}"]],[["{y} {EEE}","{d} {EEE} {y}","{dd} {EEE} {y}"],["{M}/{y} {EEE}","{EEE}, {M}/{d}/{y}","{EEE}, {M}/{dd}/{y}"],["{MM}/{y} {EEE}","{EEE}, {MM}/{d}/{y}","{EEE}, {MM}/{dd}/{y}"],["{MMMM} {y} {EEE}","{EEE}, {MMMM} {d}, {y}","{EEE}, {MMMM} {dd}, {y}"],["{MMM} {y} {EEE}","{EEE}, {MMM} {d}, {y}","{EEE}, {MMM} {dd}, {y}"],["{MMMMM} {y} {EEE}","{EEE}, {MMMMM} {d}, {y}","{EEE}, {MMMMM} {dd}, {y}"]],[["{EEE} {yy}","{d} {EEE} {yy}","{dd} {EEE} {yy}"],["{M}/{yy} {EEE}","{EEE}, {M}/{d}/{yy}","{EEE}, {M}/{dd}/{yy}"],["{MM}/{yy} {EEE}","{EEE}, {MM}/{d}/{yy}","{EEE}, {MM}/{dd}/{yy}"],["{MMMM} {yy} {EEE}","{EEE}, {MMMM} {d}, {yy}","{EEE}, {MMMM} {dd}, {yy}"],["{MMM} {yy} {EEE}","{EEE}, {MMM} {d}, {yy}","{EEE}, {MMM} {dd}, {yy}"],["{MMMMM} {yy} {EEE}","{EEE}, {MMMMM} {d}, {yy}","{EEE}, {MMMMM} {dd}, {yy}"]]],[[["{EEEEE}","{d} {EEEEE}","{dd} {EEEEE}"],["{M} {EEEEE}","{EEEEE}, {M}/{d}","{EEEEE}, {M}/{dd}"],["{MM} {EEEEE}","{EEEEE}, {MM}/{d}","{EEEEE}, {MM}/{dd}"],["{MMMM} {EEEEE}","{EEEEE}, {MMMM} {d}","{EEEEE}, {MMMM} {dd}"],["{MMM} {EEEEE}","{EEEEE}, {MMM} {d}","{EEEEE}, {MMM} {dd}"],["{MMMMM} {EEEEE}","{EEEEE}, {MMMMM} {d}","{EEEEE}, {MMMMM} {dd}"]],[["{y} {EEEEE}","{d} {EEEEE} {y}","{dd} {EEEEE} {y}"],["{M}/{y} {EEEEE}","{EEEEE}, {M}/{d}/{y}","{EEEEE}, {M}/{dd}/{y}"],["{MM}/{y} {EEEEE}","{EEEEE}, {MM}/{d}/{y}","{EEEEE}, {MM}/{dd}/{y}"],["{MMMM} {y} {EEEEE}","{EEEEE}, {MMMM} {d}, {y}","{EEEEE}, {MMMM} {dd}, {y}"],["{MMM} {y} {EEEEE}","{EEEEE}, {MMM} {d}, {y}","{EEEEE}, {MMM} {dd}, {y}"],["{MMMMM} {y} {EEEEE}","{EEEEE}, {MMMMM} {d}, {y}","{EEEEE}, {MMMMM} {dd}, {y}"]],[["{yy} {EEEEE}","{d} {EEEEE} {yy}","{dd} {EEEEE} {yy}"],["{M}/{yy} {EEEEE}","{EEEEE}, {M}/{d}/{yy}","{EEEEE}, {M}/{dd}/{yy}"],["{MM}/{yy} {EEEEE}","{EEEEE}, {MM}/{d}/{yy}","{EEEEE}, {MM}/{dd}/{yy}"],["{MMMM} {yy} {EEEEE}","{EEEEE}, {MMMM} {d}, {yy}","{EEEEE}, {MMMM} {dd}, {yy}"],["{MMM} {yy} {EEEEE}","{EEEEE}, {MMM} {d}, {yy}","{EEEEE}, {MMM} {dd}, {yy}"],["{MMMMM} {yy} {EEEEE}","{EEEEE}, {MMMMM} {d}, {yy}","{EEEEE}, {MMMMM} {dd}, {yy}"]]]];
        TIME = [[[["","{s}","{s}"],["{m}","{mm}:{ss}","{mm}:{ss}"],["{m}","{mm}:{ss}","{mm}:{ss}"]],[["{h} {a}|","{h} {a} (second: {s})","{h} {a} (second: {s})"],["{h}:{mm} {a}|","{h}:{mm}:{ss} {a}|","{h}:{mm}:{ss} {a}|"],["{h}:{mm} {a}|","{h}:{mm}:{ss} {a}|","{h}:{mm}:{ss} {a}|"]],[["{hh} {a}|","{hh} {a} (second: {s})","{hh} {a} (second: {s})"],["{hh}:{mm} {a}|","{hh}:{mm}:{ss} {a}|","{hh}:{mm}:{ss} {a}|"],["{hh}:{mm} {a}|","{hh}:{mm}:{ss} {a}|","{hh}:{mm}:{ss} {a}|"]]],[[["","{s}","{s}"],["{m}","{mm}:{ss}","{mm}:{ss}"],["{m}","{mm}:{ss}","{mm}:{ss}"]],[["{HH}","{s} (hour: {HH})","{s} (hour: {HH})"],["{HH}:{mm}|","{HH}:{mm}:{ss}|","{HH}:{mm}:{ss}|"],["{HH}:{mm}|","{HH}:{mm}:{ss}|","{HH}:{mm}:{ss}|"]],[["{HH}","{s} (hour: {HH})","{s} (hour: {HH})"],["{HH}:{mm}|","{HH}:{mm}:{ss}|","{HH}:{mm}:{ss}|"],["{HH}:{mm}|","{HH}:{mm}:{ss}|","{HH}:{mm}:{ss}|"]]]];
        /* generated by tests/compat/intl_tables.mjs: end */
    }

    const WEEKDAY = [undefined, 'long', 'short', 'narrow'];
    const YEAR = [undefined, 'numeric', '2-digit'];
    const MONTH = [undefined, 'numeric', '2-digit', 'long', 'short', 'narrow'];
    const NUM = [undefined, 'numeric', '2-digit'];
    const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August',
        'September', 'October', 'November', 'December'];
    const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
    const DATE_STYLES = { __proto__: null, full: '{EEEE}, {MMMM} {d}, {y}',
        long: '{MMMM} {d}, {y}', medium: '{MMM} {d}, {y}', short: '{M}/{d}/{yy}' };
    const TIME_STYLES = { __proto__: null,
        full: ' Coordinated Universal Time', long: ' UTC', medium: '', short: '' };
    const STYLES = ['full', 'long', 'medium', 'short'];
    const DTF = 'Intl.DateTimeFormat';
    const utcZones = ['utc', 'etc/utc', 'gmt', 'etc/gmt'];
    const dtfSlots = new WeakMapCtor();

    /* The resolved value of each field, read back from the pattern. */
    const TOKEN_FIELDS = { __proto__: null,
        EEEE: ['weekday', 'long'], EEE: ['weekday', 'short'], EEEEE: ['weekday', 'narrow'],
        y: ['year', 'numeric'], yy: ['year', '2-digit'],
        M: ['month', 'numeric'], MM: ['month', '2-digit'], MMMM: ['month', 'long'],
        MMM: ['month', 'short'], MMMMM: ['month', 'narrow'],
        d: ['day', 'numeric'], dd: ['day', '2-digit'],
        h: ['hour', 'numeric'], hh: ['hour', '2-digit'], HH: ['hour', '2-digit'],
        m: ['minute', 'numeric'], mm: ['minute', '2-digit'],
        s: ['second', 'numeric'], ss: ['second', '2-digit'] };
    const tokenRe = /\{([A-Za-z]+)\}/g;

    function createDateTimeFormat(self, locales, options, required, defaults) {
        const f = { __proto__: null };
        f.locale = resolveLocale(locales, DTF);
        const o = toOptions(options);
        getOption(o, 'localeMatcher', 'string', ['lookup', 'best fit'], DTF);
        onlyOption(o, 'calendar', undefined, ['gregory'], DTF);
        onlyOption(o, 'numberingSystem', undefined, ['latn'], DTF);
        const hour12 = getOption(o, 'hour12', 'boolean', undefined, DTF);
        let hc = getOption(o, 'hourCycle', 'string', ['h11', 'h12', 'h23', 'h24'], DTF);
        if (hour12 !== undefined) {
            hc = hour12 ? 'h12' : 'h24';
        }
        f.hourCycle = hc || 'h12';
        const tz = o.timeZone;
        if (tz !== undefined && !utcZones.includes(lower(`${tz}`))) {
            throw new RangeError(`${DTF}: time zone '${tz}' is not supported (only UTC)`);
        }
        const fields = { __proto__: null };
        fields.weekday = getOption(o, 'weekday', 'string', ['narrow', 'short', 'long'], DTF);
        onlyOption(o, 'era', ['narrow', 'short', 'long'], [], DTF);
        fields.year = getOption(o, 'year', 'string', ['2-digit', 'numeric'], DTF);
        fields.month = getOption(o, 'month', 'string',
                ['2-digit', 'numeric', 'narrow', 'short', 'long'], DTF);
        fields.day = getOption(o, 'day', 'string', ['2-digit', 'numeric'], DTF);
        onlyOption(o, 'dayPeriod', ['narrow', 'short', 'long'], [], DTF);
        fields.hour = getOption(o, 'hour', 'string', ['2-digit', 'numeric'], DTF);
        fields.minute = getOption(o, 'minute', 'string', ['2-digit', 'numeric'], DTF);
        fields.second = getOption(o, 'second', 'string', ['2-digit', 'numeric'], DTF);
        if (o.fractionalSecondDigits !== undefined) {
            throw new RangeError(`${DTF}: option fractionalSecondDigits is not supported`);
        }
        onlyOption(o, 'timeZoneName', ['short', 'long', 'shortOffset', 'longOffset',
            'shortGeneric', 'longGeneric'], [], DTF);
        getOption(o, 'formatMatcher', 'string', ['basic', 'best fit'], DTF);
        const dateStyle = getOption(o, 'dateStyle', 'string', STYLES, DTF);
        const timeStyle = getOption(o, 'timeStyle', 'string', STYLES, DTF);
        const twelve = f.hourCycle === 'h11' || f.hourCycle === 'h12';
        if (dateStyle !== undefined || timeStyle !== undefined) {
            for (const k of ['weekday', 'year', 'month', 'day', 'hour', 'minute', 'second']) {
                if (fields[k] !== undefined) {
                    throw new TypeError(`Can't set option ${k} when ` +
                                        `${dateStyle !== undefined ? 'dateStyle' : 'timeStyle'} ` +
                                        'is used');
                }
            }
            if (required === 'date' && timeStyle !== undefined) {
                throw new TypeError('Invalid option : timeStyle');
            }
            if (required === 'time' && dateStyle !== undefined) {
                throw new TypeError('Invalid option : dateStyle');
            }
            const datePart = dateStyle !== undefined ? DATE_STYLES[dateStyle] : '';
            let timePart = '';
            if (timeStyle !== undefined) {
                timePart = (twelve ? '{h}' : '{HH}') + ':{mm}' +
                        (timeStyle === 'short' ? '' : ':{ss}') + (twelve ? ' {a}' : '') +
                        TIME_STYLES[timeStyle];
            }
            f.pattern = datePart && timePart
                    ? datePart + (dateStyle === 'full' || dateStyle === 'long' ? ' at ' : ', ') +
                            timePart
                    : datePart + timePart;
            f.dateStyle = dateStyle;
            f.timeStyle = timeStyle;
        } else {
            let needDefaults = true;
            if ((required === 'date' || required === 'any') &&
                (fields.weekday || fields.year || fields.month || fields.day)) {
                needDefaults = false;
            }
            if ((required === 'time' || required === 'any') &&
                (fields.hour || fields.minute || fields.second)) {
                needDefaults = false;
            }
            if (needDefaults && (defaults === 'date' || defaults === 'all')) {
                fields.year = fields.month = fields.day = 'numeric';
            }
            if (needDefaults && (defaults === 'time' || defaults === 'all')) {
                fields.hour = fields.minute = fields.second = 'numeric';
            }
            const w = WEEKDAY.indexOf(fields.weekday), y = YEAR.indexOf(fields.year);
            const m = MONTH.indexOf(fields.month), d = NUM.indexOf(fields.day);
            loadTables();
            const datePart = DATE[w][y][m][d];
            let timePart = TIME[twelve ? 0 : 1][NUM.indexOf(fields.hour)][
                NUM.indexOf(fields.minute)][NUM.indexOf(fields.second)];
            let spaced = false;
            if (timePart[timePart.length - 1] === '|') {
                spaced = true;
                timePart = call(strSlice, timePart, 0, -1);
            }
            let glue = ', ';
            if (fields.month === 'long') {
                glue = ' at ';
            } else if (y === 0 && m === 0 && d === 0 && spaced) {
                glue = ' ';
            }
            f.pattern = datePart && timePart ? datePart + glue + timePart : datePart + timePart;
        }
        if (test(/\(/, f.pattern)) {
            /* ICU has no pattern for these fields together and falls back to a form like
             * "Tuesday (month: J)" whose resolved options are garbage: refuse it instead. */
            throw new RangeError(`${DTF}: this combination of date-time fields is not ` +
                                 'supported (' + ['weekday', 'year', 'month', 'day', 'hour',
                                     'minute', 'second'].filter((k) => fields[k]).join(', ') +
                                 ')');
        }
        f.hasHour = test(/\{(h|hh|HH)\}/, f.pattern);
        call(wmSet, dtfSlots, self, f);
        return self;
    }

    const pad2 = (n) => (n < 10 ? '0' + n : '' + n);

    function formatDate(f, x) {
        if (!(x === x && MathAbs(x) <= 8.64e15)) {
            throw new RangeError('Invalid time value');
        }
        const dt = new DateCtor(x);
        const year = call(getUTCFullYear, dt);
        const yoe = year <= 0 ? 1 - year : year; /* the year of the era, as ICU prints it */
        const month = call(getUTCMonth, dt);
        const day = call(getUTCDate, dt);
        const H = call(getUTCHours, dt);
        const hc = f.hourCycle;
        const hour = hc === 'h11' ? H % 12 : hc === 'h12' ? H % 12 || 12 : hc === 'h23' ? H : H || 24;
        const values = { __proto__: null,
            EEEE: DAYS[call(getUTCDay, dt)], EEE: call(strSlice, DAYS[call(getUTCDay, dt)], 0, 3),
            EEEEE: DAYS[call(getUTCDay, dt)][0],
            y: `${yoe}`, yy: pad2(yoe % 100),
            M: `${month + 1}`, MM: pad2(month + 1), MMMM: MONTHS[month],
            MMM: call(strSlice, MONTHS[month], 0, 3), MMMMM: MONTHS[month][0],
            d: `${day}`, dd: pad2(day),
            h: `${hour}`, hh: pad2(hour), HH: pad2(hour),
            m: `${call(getUTCMinutes, dt)}`, mm: pad2(call(getUTCMinutes, dt)),
            s: `${call(getUTCSeconds, dt)}`, ss: pad2(call(getUTCSeconds, dt)),
            a: H < 12 ? 'AM' : 'PM' };
        return call(strReplace, f.pattern, tokenRe, (all, t) => values[t]);
    }

    function DateTimeFormat(locales = undefined, options = undefined) {
        if (new.target === undefined) {
            return new DateTimeFormat(locales, options);
        }
        createDateTimeFormat(this, locales, options, 'any', 'date');
    }

    function dtfSlot(v, method) {
        const f = isObject(v) ? call(wmGet, dtfSlots, v) : undefined;
        if (!f) {
            throw new TypeError(`Method ${DTF}.prototype.${method} called on incompatible ` +
                                'receiver');
        }
        return f;
    }

    const dateArg = (date) => (date === undefined ? dateNow() : +date);

    install(DateTimeFormat, {
        supportedLocalesOf(locales) {
            return supportedLocalesOf(locales);
        },
    });
    defineProperty(DateTimeFormat, 'prototype', { writable: false });
    install(DateTimeFormat.prototype, {
        get format() {
            const f = dtfSlot(this, 'format');
            if (!f.bound) {
                f.bound = (date) => formatDate(f, dateArg(date));
            }
            return f.bound;
        },
        resolvedOptions() {
            const f = dtfSlot(this, 'resolvedOptions');
            const r = { locale: f.locale, calendar: 'gregory', numberingSystem: 'latn',
                timeZone: 'UTC' };
            if (f.hasHour) {
                r.hourCycle = f.hourCycle;
                r.hour12 = f.hourCycle === 'h11' || f.hourCycle === 'h12';
            }
            if (f.dateStyle !== undefined || f.timeStyle !== undefined) {
                if (f.dateStyle !== undefined) {
                    r.dateStyle = f.dateStyle;
                }
                if (f.timeStyle !== undefined) {
                    r.timeStyle = f.timeStyle;
                }
                return r;
            }
            const found = { __proto__: null };
            call(strReplace, f.pattern, tokenRe, (all, t) => {
                const fv = TOKEN_FIELDS[t];
                if (fv && found[fv[0]] === undefined) {
                    found[fv[0]] = fv[1];
                }
                return all;
            });
            for (const k of ['weekday', 'year', 'month', 'day', 'hour', 'minute', 'second']) {
                if (found[k] !== undefined) {
                    r[k] = found[k];
                }
            }
            return r;
        },
    });
    defineProperty(DateTimeFormat.prototype, Symbol.toStringTag, { value: DTF,
        configurable: true });

    /* ---------------------------------------------------------------- Intl, toLocaleString */

    const Intl = {};
    install(Intl, { NumberFormat, DateTimeFormat });
    defineProperty(Intl, Symbol.toStringTag, { value: 'Intl', configurable: true });
    defineProperty(globalThis, 'Intl', { value: Intl, writable: true, enumerable: false,
        configurable: true });

    function dateToLocale(self, locales, options, required, defaults) {
        const x = call(dateGetTime, self); /* TypeError unless a Date */
        if (x !== x) {
            return 'Invalid Date';
        }
        const f = { __proto__: null };
        createDateTimeFormat(f, locales, options, required, defaults);
        return formatDate(call(wmGet, dtfSlots, f), x);
    }

    install(DateProto, {
        toLocaleString(locales = undefined, options = undefined) {
            return dateToLocale(this, locales, options, 'any', 'all');
        },
        toLocaleDateString(locales = undefined, options = undefined) {
            return dateToLocale(this, locales, options, 'date', 'date');
        },
        toLocaleTimeString(locales = undefined, options = undefined) {
            return dateToLocale(this, locales, options, 'time', 'time');
        },
    });
    install(Number.prototype, {
        toLocaleString(locales = undefined, options = undefined) {
            const x = call(numberValueOf, this); /* TypeError unless a Number */
            return formatNumber(call(wmGet, nfSlots, new NumberFormat(locales, options)), x);
        },
    });
    install(BigInt.prototype, {
        toLocaleString(locales = undefined, options = undefined) {
            const x = call(bigintValueOf, this);
            return formatNumber(call(wmGet, nfSlots, new NumberFormat(locales, options)), x);
        },
    });
})
