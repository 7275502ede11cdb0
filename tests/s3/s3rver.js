// Starts s3rver (pinned in package.json) on a free loopback port with its files in DIR and the
// bucket airlock-test, prints the port on stdout, and serves until stdin closes or it is killed.
//   node s3rver.js NODE_MODULES DIR
'use strict';
const path = require('path');
const S3rver = require(path.join(process.argv[2], 's3rver'));

async function main() {
    const server = new S3rver({
        address: '127.0.0.1',
        port: 0,
        silent: true,
        directory: process.argv[3],
        configureBuckets: [{ name: 'airlock-test' }],
    });
    const { port } = await server.run();
    process.stdout.write(`${port}\n`);
    process.stdin.resume();
    process.stdin.on('end', () => server.close().then(() => process.exit(0)));
}

main().catch((e) => {
    process.stderr.write(`s3rver.js: ${e.stack}\n`);
    process.exit(1);
});
