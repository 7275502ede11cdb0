// the path of a key that is not an identifier
return { "a b": { f: function () {} } };
