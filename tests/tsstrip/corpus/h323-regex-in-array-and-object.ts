const a = [/a<b>c/, { r: /x>y/ }]; return a.length
