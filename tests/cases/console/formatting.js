console.log({ a: [1, { b: "x" }] }, [1, "two"], null, undefined, 1.5, true, "str", 10n);
console.log(function foo() {}, new Error("boom"), NaN);
console.log();
console.log("multi\nline", "\u00e9\u{1F600}");
return 0;
