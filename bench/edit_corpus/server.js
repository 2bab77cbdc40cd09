'use strict';

const http = require('http');
const { URL } = require('url');

const routes = new Map();

function route(method, path, handler) {
  routes.set(`${method} ${path}`, handler);
}

function notFound(res) {
  res.writeHead(404, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ error: 'not found' }));
}

route('GET', '/health', (req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ ok: true }));
});

route('GET', '/items', (req, res) => {
  const url = new URL(req.url, 'http://localhost');
  const limit = Number(url.searchParams.get('limit') || 10);
  const items = [];
  for (let i = 0; i < limit; i++) {
    items.push({ id: i, name: `item ${i}` });
  }
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(items));
});

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://localhost');
  const handler = routes.get(`${req.method} ${url.pathname}`);
  if (!handler) {
    notFound(res);
    return;
  }
  try {
    handler(req, res);
  } catch (err) {
    res.writeHead(500, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ error: String(err) }));
  }
});

server.listen(Number(process.env.PORT || 8080), () => {
  console.log('listening');
});
