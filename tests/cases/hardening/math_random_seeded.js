// Math.random works and is in [0, 1); the same seed gives the same sequence (test_cli.py).
const xs = Array.from({ length: 100 }, () => Math.random());
return [xs.every((x) => x >= 0 && x < 1), new Set(xs).size > 90];
