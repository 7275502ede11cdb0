return [<any>/b/.test("abc"), (<RegExp>/c/).source]
