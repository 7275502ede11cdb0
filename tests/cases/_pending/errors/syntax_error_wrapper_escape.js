// BUG: the body can close airlock's "(async function () {" wrapper and run code outside it
// (here console.log runs at script level; the run then fails with "Promise object expected").
// The source must be parsed as one function body: this must be a SyntaxError.
return 1;
})(); console.log("outside the wrapper"); (function () {
