/*
 * prelude.js - the ES2022-ES2025 library that QuickJS 2021-03-27 lacks (docs/javascript.md).
 *
 * builtins.c compiles this file once, in the zygote, and calls the function it evaluates to with
 * a few native helpers, in the guest context and before harden() freezes every intrinsic. Each
 * builtin follows its specification's algorithm step by step, so argument coercion, the order
 * of observable reads and calls, the errors thrown, holes and negative indices behave as in the
 * standard; methods are installed like the engine's own (non-enumerable, writable,
 * configurable, then frozen with everything else), with the specification's `length` and `name`.
 *
 * Rules that keep this file safe to run beside guest code:
 * - Everything the builtins use is captured here, before any guest code exists; a builtin never
 *   looks up a method on a value the guest gave it unless the specification does (guest arrays
 *   may carry their own `push`), and calls callbacks through a captured `call`.
 * - Nothing here becomes a global: the file is one function expression; the helpers live in its
 *   closure, which no guest value can reach.
 * - "use strip" drops the source text and line tables, so the builtins print as
 *   `function at() { [native code] }` like the engine's own.
 */
'use strict';
'use strip';
(function (native) {
    const ObjectCtor = Object;
    const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf } = Object;
    const ReflectOwnKeys = Reflect.ownKeys;
    const ReflectApply = Reflect.apply;
    const call = Function.prototype.call.bind(Function.prototype.call);
    const { max: MathMax, min: MathMin, trunc: MathTrunc } = Math;
    const isConstructor = native.isConstructor;
    const MAX_SAFE = 9007199254740991; /* 2^53 - 1 */
    const MAX_ARRAY = 4294967295; /* 2^32 - 1 */

    const getter = (o, k) => getOwnPropertyDescriptor(o, k).get;
    const hasOwnProperty = Object.prototype.hasOwnProperty;
    const ArraySort = Array.prototype.sort;
    const TypedArrayProto = getPrototypeOf(Int8Array.prototype);
    const typedArrayName = getter(TypedArrayProto, Symbol.toStringTag);
    const typedArrayLength = getter(TypedArrayProto, 'length');
    const TypedArraySort = TypedArrayProto.sort;
    const typedArrays = {
        __proto__: null,
        Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array,
        Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array,
    };
    const SetProto = Set.prototype;
    const setSize = getter(SetProto, 'size');
    const { has: setHas, add: setAdd, delete: setDelete, values: setValues } = SetProto;
    const setIteratorNext = getPrototypeOf(new Set().values()).next;
    const MapCtor = Map;
    const { get: mapGet, set: mapSet } = Map.prototype;
    const SetCtor = Set;
    const charCodeAt = String.prototype.charCodeAt;
    const StringSlice = String.prototype.slice;

    /* ---------------------------------------------------------------- abstract operations */

    /* A short description of a value for error messages; never runs guest code. */
    function describe(v) {
        if (typeof v === 'string') {
            return `"${v.length > 20 ? call(StringSlice, v, 0, 20) + '...' : v}"`;
        }
        if (typeof v === 'object' || typeof v === 'function' || typeof v === 'symbol') {
            return v === null ? 'null' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
        }
        return `${v}`;
    }

    function isObject(v) {
        return (typeof v === 'object' && v !== null) || typeof v === 'function';
    }

    function requireCallable(f, what) {
        if (typeof f !== 'function') {
            throw new TypeError(`${what}: ${describe(f)} is not a function`);
        }
    }

    function toObject(v, what) {
        if (v === undefined || v === null) {
            throw new TypeError(`${what} called on ${v}`);
        }
        return ObjectCtor(v);
    }

    function toIntegerOrInfinity(v) {
        const n = +v; /* ToNumber: TypeError for symbols and BigInts */
        if (n !== n) {
            return 0;
        }
        const t = MathTrunc(n);
        return t === 0 ? 0 : t;
    }

    function lengthOfArrayLike(o) {
        const n = toIntegerOrInfinity(o.length);
        return n <= 0 ? 0 : MathMin(n, MAX_SAFE);
    }

    function toStringOf(v, what) {
        if (v === undefined || v === null) {
            throw new TypeError(`${what} called on ${v}`);
        }
        return `${v}`; /* ToString: TypeError for symbols */
    }

    function toPropertyKey(v) {
        if (typeof v === 'symbol') {
            return v;
        }
        if (!isObject(v)) {
            return `${v}`;
        }
        return ReflectOwnKeys({ [v]: 0 })[0]; /* ToPrimitive with hint string, then ToString */
    }

    function createDataProperty(o, k, v) {
        defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
    }

    /* ArrayCreate(len) for the copying methods: a RangeError past 2^32 - 1 elements. */
    function arrayCreate(len) {
        if (len > MAX_ARRAY) {
            throw new RangeError('Invalid array length');
        }
        return [];
    }

    /* Installs each own property of `methods` on `target` as the engine installs its own:
     * data properties writable, configurable, non-enumerable; accessors configurable. */
    function install(target, methods) {
        for (const k of ReflectOwnKeys(methods)) {
            const d = getOwnPropertyDescriptor(methods, k);
            if (d.get || d.set) {
                defineProperty(target, k, { get: d.get, set: d.set, enumerable: false,
                    configurable: true });
            } else {
                defineProperty(target, k, { value: d.value, writable: true, enumerable: false,
                    configurable: true });
            }
        }
    }

    /* ---------------------------------------------------------------- Array.prototype */

    install(Array.prototype, {
        at(index) {
            const O = toObject(this, 'Array.prototype.at');
            const len = lengthOfArrayLike(O);
            const rel = toIntegerOrInfinity(index);
            const k = rel >= 0 ? rel : len + rel;
            if (k < 0 || k >= len) {
                return undefined;
            }
            return O[k];
        },
        findLast(predicate, thisArg = undefined) {
            const O = toObject(this, 'Array.prototype.findLast');
            const len = lengthOfArrayLike(O);
            requireCallable(predicate, 'Array.prototype.findLast');
            for (let k = len - 1; k >= 0; k--) {
                const v = O[k];
                if (call(predicate, thisArg, v, k, O)) {
                    return v;
                }
            }
            return undefined;
        },
        findLastIndex(predicate, thisArg = undefined) {
            const O = toObject(this, 'Array.prototype.findLastIndex');
            const len = lengthOfArrayLike(O);
            requireCallable(predicate, 'Array.prototype.findLastIndex');
            for (let k = len - 1; k >= 0; k--) {
                if (call(predicate, thisArg, O[k], k, O)) {
                    return k;
                }
            }
            return -1;
        },
        toReversed() {
            const O = toObject(this, 'Array.prototype.toReversed');
            const len = lengthOfArrayLike(O);
            const A = arrayCreate(len);
            for (let k = 0; k < len; k++) {
                A[k] = O[len - k - 1];
            }
            return A;
        },
        toSorted(comparefn) {
            if (comparefn !== undefined && typeof comparefn !== 'function') {
                throw new TypeError('Array.prototype.toSorted: the comparison function must be ' +
                                    'either a function or undefined');
            }
            const O = toObject(this, 'Array.prototype.toSorted');
            const len = lengthOfArrayLike(O);
            const A = arrayCreate(len);
            for (let k = 0; k < len; k++) {
                A[k] = O[k];
            }
            ReflectApply(ArraySort, A, [comparefn]);
            return A;
        },
        toSpliced(start, skipCount, ...items) {
            const O = toObject(this, 'Array.prototype.toSpliced');
            const len = lengthOfArrayLike(O);
            const rel = toIntegerOrInfinity(start);
            const from = rel === -Infinity ? 0 : rel < 0 ? MathMax(len + rel, 0) : MathMin(rel, len);
            let skip;
            if (arguments.length === 0) {
                skip = 0;
            } else if (arguments.length === 1) {
                skip = len - from;
            } else {
                skip = MathMin(MathMax(toIntegerOrInfinity(skipCount), 0), len - from);
            }
            const newLen = len + items.length - skip;
            if (newLen > MAX_SAFE) {
                throw new TypeError('Array.prototype.toSpliced: the result would be longer ' +
                                    'than 2^53 - 1');
            }
            const A = arrayCreate(newLen);
            let i = 0;
            for (; i < from; i++) {
                A[i] = O[i];
            }
            for (let j = 0; j < items.length; j++) {
                A[i++] = items[j];
            }
            for (let r = from + skip; i < newLen; i++, r++) {
                A[i] = O[r];
            }
            return A;
        },
        with(index, value) {
            const O = toObject(this, 'Array.prototype.with');
            const len = lengthOfArrayLike(O);
            const rel = toIntegerOrInfinity(index);
            const at = rel >= 0 ? rel : len + rel;
            if (at >= len || at < 0) {
                throw new RangeError(`Array.prototype.with: invalid index ${rel}`);
            }
            const A = arrayCreate(len);
            for (let k = 0; k < len; k++) {
                A[k] = k === at ? value : O[k];
            }
            return A;
        },
    });
    {
        const unscopables = Array.prototype[Symbol.unscopables];
        for (const k of ['at', 'findLast', 'findLastIndex', 'toReversed', 'toSorted',
                         'toSpliced']) {
            createDataProperty(unscopables, k, true);
        }
    }

    /* ---------------------------------------------------------------- %TypedArray%.prototype */

    function validateTypedArray(O, what) {
        const name = ReflectApply(typedArrayName, O, []);
        if (name === undefined) {
            throw new TypeError(`${what}: the receiver is not a typed array`);
        }
        return name;
    }

    install(TypedArrayProto, {
        at(index) {
            validateTypedArray(this, '%TypedArray%.prototype.at');
            const len = ReflectApply(typedArrayLength, this, []);
            const rel = toIntegerOrInfinity(index);
            const k = rel >= 0 ? rel : len + rel;
            if (k < 0 || k >= len) {
                return undefined;
            }
            return this[k];
        },
        findLast(predicate, thisArg = undefined) {
            validateTypedArray(this, '%TypedArray%.prototype.findLast');
            const len = ReflectApply(typedArrayLength, this, []);
            requireCallable(predicate, '%TypedArray%.prototype.findLast');
            for (let k = len - 1; k >= 0; k--) {
                const v = this[k];
                if (call(predicate, thisArg, v, k, this)) {
                    return v;
                }
            }
            return undefined;
        },
        findLastIndex(predicate, thisArg = undefined) {
            validateTypedArray(this, '%TypedArray%.prototype.findLastIndex');
            const len = ReflectApply(typedArrayLength, this, []);
            requireCallable(predicate, '%TypedArray%.prototype.findLastIndex');
            for (let k = len - 1; k >= 0; k--) {
                if (call(predicate, thisArg, this[k], k, this)) {
                    return k;
                }
            }
            return -1;
        },
        toReversed() {
            const name = validateTypedArray(this, '%TypedArray%.prototype.toReversed');
            const len = ReflectApply(typedArrayLength, this, []);
            const A = new typedArrays[name](len);
            for (let k = 0; k < len; k++) {
                A[k] = this[len - k - 1];
            }
            return A;
        },
        toSorted(comparefn) {
            if (comparefn !== undefined && typeof comparefn !== 'function') {
                throw new TypeError('%TypedArray%.prototype.toSorted: the comparison function ' +
                                    'must be either a function or undefined');
            }
            const name = validateTypedArray(this, '%TypedArray%.prototype.toSorted');
            const len = ReflectApply(typedArrayLength, this, []);
            const A = new typedArrays[name](len);
            for (let k = 0; k < len; k++) {
                A[k] = this[k];
            }
            ReflectApply(TypedArraySort, A, [comparefn]);
            return A;
        },
        with(index, value) {
            const name = validateTypedArray(this, '%TypedArray%.prototype.with');
            const len = ReflectApply(typedArrayLength, this, []);
            const rel = toIntegerOrInfinity(index);
            const at = rel >= 0 ? rel : len + rel;
            /* ToNumber or ToBigInt, as the element type wants, before the index is checked */
            const cell = new typedArrays[name](1);
            cell[0] = value;
            if (at >= ReflectApply(typedArrayLength, this, []) || at < 0) {
                throw new RangeError(`%TypedArray%.prototype.with: invalid index ${rel}`);
            }
            const A = new typedArrays[name](len);
            for (let k = 0; k < len; k++) {
                A[k] = k === at ? cell[0] : this[k];
            }
            return A;
        },
    });

    /* ---------------------------------------------------------------- Object, Map, Array */

    /* GroupBy(items, callback, keyCoercion): groups in first-seen key order. */
    function groupBy(items, callback, propertyKeys, what) {
        if (items === undefined || items === null) {
            throw new TypeError(`${what} called on ${items}`);
        }
        requireCallable(callback, what);
        const groups = new MapCtor();
        let k = 0;
        for (const value of items) { /* an abrupt completion closes the iterator */
            let key = call(callback, undefined, value, k);
            if (propertyKeys) {
                key = toPropertyKey(key);
            } else if (key === 0) {
                key = 0; /* -0 becomes +0 */
            }
            const group = ReflectApply(mapGet, groups, [key]);
            if (group) {
                group[group.length] = value;
            } else {
                ReflectApply(mapSet, groups, [key, [value]]);
            }
            k++;
        }
        return groups;
    }

    install(Object, {
        hasOwn(O, P) {
            const obj = toObject(O, 'Object.hasOwn');
            return ReflectApply(hasOwnProperty, obj, [P]);
        },
        groupBy(items, callbackfn) {
            const groups = groupBy(items, callbackfn, true, 'Object.groupBy');
            const obj = { __proto__: null };
            for (const [key, group] of groups) {
                createDataProperty(obj, key, group);
            }
            return obj;
        },
    });

    install(Map, {
        groupBy(items, callbackfn) {
            return groupBy(items, callbackfn, false, 'Map.groupBy');
        },
    });

    /* Array.fromAsync: the closure runs as an async function; the method itself is an ordinary
     * function (like the standard's), so it is no AsyncFunction and has no `prototype`. */
    async function fromAsync(C, asyncItems, mapfn, thisArg) {
        const mapping = mapfn !== undefined;
        if (mapping) {
            requireCallable(mapfn, 'Array.fromAsync');
        }
        const getMethod = (k) => {
            const m = asyncItems[k]; /* TypeError for undefined and null */
            if (m === undefined || m === null) {
                return undefined;
            }
            requireCallable(m, 'Array.fromAsync');
            return m;
        };
        const usingAsync = getMethod(Symbol.asyncIterator);
        const usingSync = usingAsync === undefined ? getMethod(Symbol.iterator) : undefined;
        if (usingAsync !== undefined || usingSync !== undefined) {
            const iterator = call(usingAsync !== undefined ? usingAsync : usingSync, asyncItems);
            if (!isObject(iterator)) {
                throw new TypeError('Array.fromAsync: the iterator is not an object');
            }
            /* for await reads `next` once, wraps a sync iterator as CreateAsyncFromSyncIterator
             * does, and closes the iterator when the body completes abruptly. */
            const source = usingAsync !== undefined
                    ? { [Symbol.asyncIterator]: () => iterator }
                    : { [Symbol.iterator]: () => iterator };
            const A = isConstructor(C) ? new C() : [];
            let k = 0;
            for await (const v of source) {
                const mapped = mapping ? await call(mapfn, thisArg, v, k) : v;
                createDataProperty(A, k, mapped);
                k++;
            }
            A.length = k;
            return A;
        }
        const arrayLike = ObjectCtor(asyncItems);
        const len = lengthOfArrayLike(arrayLike);
        const A = isConstructor(C) ? new C(len) : arrayCreate(len);
        for (let k = 0; k < len; k++) {
            const v = await arrayLike[k];
            createDataProperty(A, k, mapping ? await call(mapfn, thisArg, v, k) : v);
        }
        A.length = len;
        return A;
    }

    install(Array, {
        fromAsync(asyncItems) {
            return fromAsync(this, asyncItems, arguments[1], arguments[2]);
        },
    });

    /* ---------------------------------------------------------------- Promise */

    install(Promise, {
        withResolvers() {
            const C = this;
            if (!isConstructor(C)) {
                throw new TypeError('Promise.withResolvers: the receiver is not a constructor');
            }
            let resolve;
            let reject;
            const promise = new C((res, rej) => {
                if (resolve !== undefined || reject !== undefined) {
                    throw new TypeError('Promise executor has already been invoked');
                }
                resolve = res;
                reject = rej;
            });
            if (typeof resolve !== 'function' || typeof reject !== 'function') {
                throw new TypeError('Promise resolve or reject function is not callable');
            }
            return { promise, resolve, reject };
        },
    });

    /* ---------------------------------------------------------------- Set methods */

    function requireSet(O, what) {
        ReflectApply(setSize, O, []); /* TypeError unless O has [[SetData]] */
        return O;
    }

    /* GetSetRecord(other) */
    function setRecord(other, what) {
        if (!isObject(other)) {
            throw new TypeError(`${what}: the argument is not an object`);
        }
        const num = +other.size;
        if (num !== num) {
            throw new TypeError(`${what}: the argument's size is not a number`);
        }
        const size = toIntegerOrInfinity(num);
        if (size < 0) {
            throw new RangeError(`${what}: the argument's size is negative`);
        }
        const has = other.has;
        requireCallable(has, `${what}: the argument's has`);
        const keys = other.keys;
        requireCallable(keys, `${what}: the argument's keys`);
        return { set: other, size, has, keys };
    }

    /* GetIteratorFromMethod(set, keys) as { iterator, next } */
    function keysIterator(rec, what) {
        const iterator = call(rec.keys, rec.set);
        if (!isObject(iterator)) {
            throw new TypeError(`${what}: keys() did not return an object`);
        }
        return { iterator, next: iterator.next };
    }

    /* IteratorStepValue: { done } or { value }, with -0 canonicalised to +0 */
    function stepValue(it, what) {
        const r = call(it.next, it.iterator);
        if (!isObject(r)) {
            throw new TypeError(`${what}: the iterator result is not an object`);
        }
        if (r.done) {
            return true;
        }
        const v = r.value;
        it.value = v === 0 ? 0 : v;
        return false;
    }

    /* IteratorClose after a normal completion */
    function closeIterator(it, what) {
        const ret = it.iterator.return;
        if (ret === undefined || ret === null) {
            return;
        }
        requireCallable(ret, what);
        if (!isObject(call(ret, it.iterator))) {
            throw new TypeError(`${what}: the iterator's return() did not return an object`);
        }
    }

    /* The elements of a Set, read through its internal data: a snapshot array. */
    function setElements(S) {
        const it = ReflectApply(setValues, S, []);
        const out = [];
        for (;;) {
            const r = ReflectApply(setIteratorNext, it, []);
            if (r.done) {
                return out;
            }
            out[out.length] = r.value;
        }
    }

    function setCopy(S) {
        const R = new SetCtor();
        const it = ReflectApply(setValues, S, []);
        for (;;) {
            const r = ReflectApply(setIteratorNext, it, []);
            if (r.done) {
                return R;
            }
            ReflectApply(setAdd, R, [r.value]);
        }
    }

    /* Calls f(e) for each element of S, live: elements added meanwhile are visited, deleted ones
     * are not (the specification's index walk over [[SetData]]). Stops when f returns true. */
    function someInSet(S, f) {
        const it = ReflectApply(setValues, S, []);
        for (;;) {
            const r = ReflectApply(setIteratorNext, it, []);
            if (r.done) {
                return false;
            }
            if (f(r.value)) {
                return true;
            }
        }
    }

    const inOther = (rec, e) => !!call(rec.has, rec.set, e);

    install(SetProto, {
        union(other) {
            const what = 'Set.prototype.union';
            const O = requireSet(this, what);
            const rec = setRecord(other, what);
            const it = keysIterator(rec, what);
            const R = setCopy(O);
            while (!stepValue(it, what)) {
                ReflectApply(setAdd, R, [it.value]);
            }
            return R;
        },
        intersection(other) {
            const what = 'Set.prototype.intersection';
            const O = requireSet(this, what);
            const rec = setRecord(other, what);
            const R = new SetCtor();
            if (ReflectApply(setSize, O, []) <= rec.size) {
                someInSet(O, (e) => {
                    if (inOther(rec, e)) {
                        ReflectApply(setAdd, R, [e]);
                    }
                    return false;
                });
            } else {
                const it = keysIterator(rec, what);
                while (!stepValue(it, what)) {
                    if (ReflectApply(setHas, O, [it.value])) {
                        ReflectApply(setAdd, R, [it.value]);
                    }
                }
            }
            return R;
        },
        difference(other) {
            const what = 'Set.prototype.difference';
            const O = requireSet(this, what);
            const rec = setRecord(other, what);
            const R = setCopy(O);
            if (ReflectApply(setSize, O, []) <= rec.size) {
                for (const e of setElements(R)) {
                    if (inOther(rec, e)) {
                        ReflectApply(setDelete, R, [e]);
                    }
                }
            } else {
                const it = keysIterator(rec, what);
                while (!stepValue(it, what)) {
                    ReflectApply(setDelete, R, [it.value]);
                }
            }
            return R;
        },
        symmetricDifference(other) {
            const what = 'Set.prototype.symmetricDifference';
            const O = requireSet(this, what);
            const rec = setRecord(other, what);
            const it = keysIterator(rec, what);
            const R = setCopy(O);
            while (!stepValue(it, what)) {
                const v = it.value;
                if (ReflectApply(setHas, O, [v])) {
                    ReflectApply(setDelete, R, [v]);
                } else {
                    ReflectApply(setAdd, R, [v]);
                }
            }
            return R;
        },
        isSubsetOf(other) {
            const what = 'Set.prototype.isSubsetOf';
            const O = requireSet(this, what);
            const rec = setRecord(other, what);
            if (ReflectApply(setSize, O, []) > rec.size) {
                return false;
            }
            return !someInSet(O, (e) => !inOther(rec, e));
        },
        isSupersetOf(other) {
            const what = 'Set.prototype.isSupersetOf';
            const O = requireSet(this, what);
            const rec = setRecord(other, what);
            if (ReflectApply(setSize, O, []) < rec.size) {
                return false;
            }
            const it = keysIterator(rec, what);
            while (!stepValue(it, what)) {
                if (!ReflectApply(setHas, O, [it.value])) {
                    closeIterator(it, what);
                    return false;
                }
            }
            return true;
        },
        isDisjointFrom(other) {
            const what = 'Set.prototype.isDisjointFrom';
            const O = requireSet(this, what);
            const rec = setRecord(other, what);
            if (ReflectApply(setSize, O, []) <= rec.size) {
                return !someInSet(O, (e) => inOther(rec, e));
            }
            const it = keysIterator(rec, what);
            while (!stepValue(it, what)) {
                if (ReflectApply(setHas, O, [it.value])) {
                    closeIterator(it, what);
                    return false;
                }
            }
            return true;
        },
    });

    /* ---------------------------------------------------------------- String.prototype */

    /* Index of the first lone surrogate in s at or after i, else -1. */
    function loneSurrogate(s, i) {
        const n = s.length;
        for (; i < n; i++) {
            const c = call(charCodeAt, s, i);
            if (c < 0xd800 || c > 0xdfff) {
                continue;
            }
            if (c <= 0xdbff && i + 1 < n) {
                const d = call(charCodeAt, s, i + 1);
                if (d >= 0xdc00 && d <= 0xdfff) {
                    i++;
                    continue;
                }
            }
            return i;
        }
        return -1;
    }

    install(String.prototype, {
        at(index) {
            const S = toStringOf(this, 'String.prototype.at');
            const len = S.length;
            const rel = toIntegerOrInfinity(index);
            const k = rel >= 0 ? rel : len + rel;
            if (k < 0 || k >= len) {
                return undefined;
            }
            return S[k];
        },
        isWellFormed() {
            return loneSurrogate(toStringOf(this, 'String.prototype.isWellFormed'), 0) < 0;
        },
        toWellFormed() {
            const S = toStringOf(this, 'String.prototype.toWellFormed');
            let i = loneSurrogate(S, 0);
            if (i < 0) {
                return S;
            }
            let out = '';
            let from = 0;
            while (i >= 0) {
                out += call(StringSlice, S, from, i) + '\ufffd';
                from = i + 1;
                i = loneSurrogate(S, from);
            }
            return out + call(StringSlice, S, from);
        },
    });

})
