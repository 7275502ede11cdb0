function inner() {
  throw new RangeError("deep");
}
function outer() {
  return inner();
}
outer();
