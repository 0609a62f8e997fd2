// kafkajs against a kaas cluster: a consumer group, then the admin
// surface — listGroups, describeGroups, fetchOffsets, setOffsets,
// resetOffsets, deleteGroups. Usage: node groups.js BOOTSTRAP [SUFFIX]
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, suffix = ''] = process.argv.slice(2)
const topic = `js-topic${suffix}`
const groupId = `js-group${suffix}`
const PARTITIONS = 3
const MESSAGES = 90

function check (cond, what) {
  if (!cond) {
    console.error(`FAILED: ${what}`)
    process.exit(1)
  }
  console.log(`ok: ${what}`)
}

async function main () {
  const kafka = new Kafka({ clientId: 'js-client', brokers: bootstrap.split(','), logLevel: logLevel.WARN })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }], waitForLeaders: true })

  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  const messages = Array.from({ length: MESSAGES }, (_, i) => ({ value: `m-${i}`, partition: i % PARTITIONS }))
  await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let seen = 0
  const done = new Promise(resolve => {
    consumer.run({
      eachMessage: async () => {
        seen += 1
        if (seen === MESSAGES) resolve()
      }
    })
  })
  await Promise.race([done, new Promise(resolve => setTimeout(resolve, 60000).unref())])
  check(seen === MESSAGES, `consumed ${seen} of ${MESSAGES} messages in a group`)
  // kafkajs commits on its own schedule; make sure the last offsets are in.
  await consumer.commitOffsets([0, 1, 2].map(p => ({ topic, partition: p, offset: String(MESSAGES / PARTITIONS) })))

  const { groups } = await admin.listGroups()
  check(groups.some(g => g.groupId === groupId && g.protocolType === 'consumer'), `listGroups shows the group: ${JSON.stringify(groups)}`)

  const described = await admin.describeGroups([groupId])
  const g = described.groups[0]
  check(g.state === 'Stable' && g.members.length === 1, `describeGroups: Stable with one member (${g.state}, ${g.members.length})`)
  check(g.protocol === 'RoundRobinAssigner', `the group runs kafkajs' assigner: ${g.protocol}`)

  let offsets = await admin.fetchOffsets({ groupId, topics: [topic] })
  const total = offsets[0].partitions.reduce((s, p) => s + Number(p.offset), 0)
  check(total === MESSAGES, `fetchOffsets adds up to ${MESSAGES}: ${JSON.stringify(offsets)}`)

  await consumer.disconnect()
  const afterLeave = await admin.describeGroups([groupId])
  check(afterLeave.groups[0].state === 'Empty', `after disconnect the group is Empty (${afterLeave.groups[0].state})`)

  await admin.setOffsets({ groupId, topic, partitions: [{ partition: 1, offset: '5' }] })
  offsets = await admin.fetchOffsets({ groupId, topics: [topic] })
  const p1 = offsets[0].partitions.find(p => p.partition === 1)
  check(p1.offset === '5', `setOffsets moved partition 1 to 5 (${p1.offset})`)

  await admin.resetOffsets({ groupId, topic, earliest: true })
  offsets = await admin.fetchOffsets({ groupId, topics: [topic] })
  // kafkajs commits the EARLIEST sentinel (-2) itself, and the broker keeps
  // what was committed, as Apache does.
  check(offsets[0].partitions.every(p => p.offset === '-2'), `resetOffsets to earliest: ${JSON.stringify(offsets[0].partitions)}`)

  await admin.deleteGroups([groupId])
  const after = await admin.listGroups()
  check(!after.groups.some(x => x.groupId === groupId), 'the deleted group is gone from listGroups')

  let failed = false
  try {
    await admin.deleteGroups([`js-never-existed${suffix}`])
  } catch (e) {
    failed = true
  }
  check(failed, 'deleting an unknown group fails')
  await admin.disconnect()
  console.log('kafkajs: all checks passed')
}

main().catch(e => {
  console.error('FAILED:', e)
  process.exit(1)
})
