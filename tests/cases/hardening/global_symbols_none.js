return Object.getOwnPropertySymbols(globalThis).map(String);
