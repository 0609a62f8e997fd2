// kafkajs over TLS against a kaas cluster.
// Usage: node secure.js MODE PKI_DIR BOOTSTRAP, MODE one of
//   ssl       SSL with a client certificate (PKI_DIR/app.pem, app.key);
//   sasl_ssl  SASL_SSL with SCRAM-SHA-512 as admin / admin-secret, and a
//             wrong password must be an authentication error at once.
// Both trust PKI_DIR/ca.pem and check the broker's host name. Creates a
// topic, produces 30 records, consumes them in a group, commits and reads
// the commit back. Exits non-zero on the first difference; prints "all
// checks passed".
const fs = require('fs')
const path = require('path')
const { Kafka, logLevel } = require('kafkajs')

const [mode, pki, bootstrap] = process.argv.slice(2)
const topic = `js-${mode}-${process.pid}`
const PARTITIONS = 3
const RECORDS = 30

function check (cond, what) {
  if (!cond) {
    console.error(`FAILED: ${what}`)
    process.exit(1)
  }
  console.log(`ok: ${what}`)
}

function client (password = 'admin-secret') {
  const ssl = { ca: [fs.readFileSync(path.join(pki, 'ca.pem'))] }
  const config = { clientId: 'js-secure', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING, ssl }
  if (mode === 'ssl') {
    ssl.cert = fs.readFileSync(path.join(pki, 'app.pem'))
    ssl.key = fs.readFileSync(path.join(pki, 'app.key'))
  } else {
    config.sasl = { mechanism: 'scram-sha-512', username: 'admin', password }
  }
  return new Kafka(config)
}

async function main () {
  const kafka = client()
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }], waitForLeaders: true })
  check(true, `created ${topic} over ${mode}`)

  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  const messages = Array.from({ length: RECORDS }, (_, i) => ({ value: `r${i}`, partition: i % PARTITIONS }))
  await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
  check(true, `produced ${RECORDS} over ${mode}`)

  const groupId = `${topic}-group`
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let seen = 0
  const done = new Promise(resolve => {
    consumer.run({
      autoCommit: false,
      eachMessage: async () => {
        seen += 1
        if (seen === RECORDS) resolve()
      }
    })
  })
  await Promise.race([done, new Promise(resolve => setTimeout(resolve, 60000).unref())])
  check(seen === RECORDS, `consumed ${seen} of ${RECORDS} in a group`)
  await consumer.commitOffsets([0, 1, 2].map(p => ({ topic, partition: p, offset: String(RECORDS / PARTITIONS) })))
  await consumer.disconnect()
  const offsets = await admin.fetchOffsets({ groupId, topics: [topic] })
  const total = offsets[0].partitions.reduce((s, p) => s + Number(p.offset), 0)
  check(total === RECORDS, `the group's committed offsets add up to ${total}`)
  await admin.disconnect()

  if (mode === 'sasl_ssl') {
    const bad = client('wrong').producer()
    const started = Date.now()
    let error = null
    try {
      await bad.connect()
    } catch (e) {
      error = e
    }
    const elapsed = Date.now() - started
    check(error !== null && error.name === 'KafkaJSSASLAuthenticationError',
      `a wrong password: an authentication error (${error && error.name}: ${error && error.message})`)
    check(elapsed < 5000, `within 5 s (${elapsed} ms)`)
  }
  console.log('all checks passed')
}

main().catch(e => {
  console.error('FAILED:', e)
  process.exit(1)
})
