let k = 0
const o = {} satisfies object
;(() => { k = 1 })()
return k
