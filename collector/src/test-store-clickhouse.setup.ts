// The vitest project "clickhouse" (vitest.config.ts): its collectors run on ClickHouse.
process.env['AGENTRT_TEST_STORE'] = 'clickhouse';
