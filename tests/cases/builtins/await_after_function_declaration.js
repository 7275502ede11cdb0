// QuickJS 2021-03-27 read the token after a nested function body as that function's, so a
// statement-level await (or yield) right after a function declaration was a SyntaxError.
function helper(x) {
  return x * 2;
}
await null;
const f = async () => {
  function inner() {}
  await inner();
  return 1;
};
function* g() {
  function h() {}
  yield 2;
}
class A {
  m() {}
}
await 0;
return [helper(1), await f(), ...g(), typeof A];
