return `${/a>b/.source}`
