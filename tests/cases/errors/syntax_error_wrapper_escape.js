// The body cannot close airlock's "(async function () {" wrapper to run code outside it:
// the source is parsed as one function body, so this is a SyntaxError and nothing runs.
return 1;
})(); console.log("outside the wrapper"); (function () {
